"""Keys that take the most bytes a key can: random 4-byte UTF-8 characters, which PostgreSQL's compression of a long
index entry cannot shrink ('€' * 8000 compresses to a few bytes and fits any index; these do not)."""

from __future__ import annotations

import random


def widest_key(chars: int, *, seed: int = 0, prefix: str = "") -> str:
    """`prefix` and then random characters of U+10000 to U+10FFFF (4 bytes each), `chars` characters in all."""
    rng = random.Random(seed)
    return prefix + "".join(chr(rng.randrange(0x10000, 0x110000)) for _ in range(chars - len(prefix)))
