"""Pure parts of reading outside input: storable text, scrubbed and bounded; keys within their byte bound."""

from __future__ import annotations

import hashlib

import pytest

from crontick.text import KEY_MAX_BYTES, LAST_ERROR_MAX_CHARS, describe, fit_key, key_too_long, scrub, storable


def test_ordinary_text_is_stored_as_it_is() -> None:
    for text in ["", "ValueError: boom on attempt 1", "línea\nzwei\tdrei 🎉 \x01\x7f", "x" * LAST_ERROR_MAX_CHARS]:
        assert storable(text) == text


def test_nul_and_every_surrogate_become_the_replacement_character() -> None:
    text = "a\x00b\udc80c\ud800\udfffd\ud83d\ude00"  # a "pair" in a Python str is still two lone code points
    assert storable(text) == "a\ufffdb\ufffdc\ufffd\ufffdd\ufffd\ufffd"
    storable(text).encode("utf-8")  # encodable: psycopg can send it


def test_length_is_bounded_and_bounding_twice_changes_nothing() -> None:
    once = storable("\x00" + "y" * 10_000_000)
    assert len(once) == LAST_ERROR_MAX_CHARS and once[0] == "\ufffd" and once.endswith("y…")
    assert storable(once) == once
    assert storable("z" * 300, 200) == "z" * 199 + "…"


def test_scrub_removes_secrets_then_makes_the_text_storable() -> None:
    secret = "s" * 40
    assert scrub(f"Bearer {secret}\x00 \udc80", [secret]) == "Bearer [redacted]\ufffd \ufffd"


def test_describe_survives_an_exception_whose_str_raises() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert describe(Odd()) == "Odd: (its message could not be read)"
    assert describe(ValueError("plain")) == "ValueError: plain"


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def test_the_key_bound_counts_utf8_bytes_so_a_long_ascii_key_is_kept() -> None:
    for kept in ("k" * 2000, "k" * KEY_MAX_BYTES, "€" * 682 + "kk", "\U0001f600" * 512):  # each 2,048 bytes at most
        assert _bytes(kept) <= KEY_MAX_BYTES and key_too_long("key", kept) is None and fit_key(kept) == kept
    assert key_too_long("key", "k" * 2049) == "expected key of at most 2,048 bytes (UTF-8), got 2049"
    assert key_too_long("key", "€" * 683) == "expected key of at most 2,048 bytes (UTF-8), got 2049"  # 683 characters
    assert key_too_long("key", "\U0001f600" * 512 + "k") == "expected key of at most 2,048 bytes (UTF-8), got 2049"
    assert key_too_long("key", None) is None


def test_a_longer_key_becomes_its_stable_digest_within_the_bound() -> None:
    longer, other = "k" * 5000, "k" * 4999 + "j"
    assert fit_key(longer) == fit_key(longer) != fit_key(other)  # one sender, one key; two senders, two
    assert fit_key(longer) == "k" * 1974 + "…sha256:" + hashlib.sha256(longer.encode()).hexdigest()
    assert _bytes(fit_key(longer)) == KEY_MAX_BYTES
    assert _bytes(fit_key("\udc80" * 1000)) <= KEY_MAX_BYTES  # a lone surrogate does not make the digest raise


@pytest.mark.parametrize("lead", range(4))
@pytest.mark.parametrize("char", ["é", "€", "\U0001f600"])  # 2, 3 and 4 bytes
def test_a_digest_cuts_a_multibyte_key_between_characters(lead: int, char: str) -> None:
    key = "a" * lead + char * 2000  # the 1,974th byte falls anywhere in a character
    fitted = fit_key(key)
    prefix, mark, digest = fitted.partition("…sha256:")
    assert mark and digest == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(prefix) and _bytes(key[: len(prefix) + 1]) > 1974  # whole characters, as many as fit
    assert KEY_MAX_BYTES - 3 <= _bytes(fitted) <= KEY_MAX_BYTES
    assert fitted.encode().decode() == fitted and fit_key(fitted) == fitted
