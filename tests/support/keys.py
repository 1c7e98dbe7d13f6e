"""Keys that take the most bytes a key can: random 4-byte UTF-8 characters, which PostgreSQL's compression of a long
index entry cannot shrink ('€' * 8000 compresses to a few bytes and fits any index; these do not)."""

from __future__ import annotations

import random

from crontick.text import KEY_MAX_BYTES

# The most 4-byte characters a key holds: KEY_MAX_BYTES of UTF-8, none of them compressible.
WIDEST_CHARS = KEY_MAX_BYTES // 4


def widest_key(chars: int, *, seed: int = 0, prefix: str = "") -> str:
    """`prefix` and then random characters of U+10000 to U+10FFFF (4 bytes each), `chars` characters in all."""
    rng = random.Random(seed)
    return prefix + "".join(chr(rng.randrange(0x10000, 0x110000)) for _ in range(chars - len(prefix)))


def key_of_bytes(size: int, *, seed: int = 0) -> str:
    """A key of exactly `size` bytes of UTF-8: random 4-byte characters, then ASCII for the rest (2,049: 512 and one)."""
    return widest_key(size // 4, seed=seed) + "k" * (size % 4)
