"""Text that crontick stores or shows from outside its own code (errors, provider answers, keys): secrets removed, length capped."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

LAST_ERROR_MAX_CHARS = 2000
# A failed attempt's traceback in its history: the outermost frames and the innermost, the middle cut.
TRACEBACK_MAX_CHARS = 16 * 1024
_TRACEBACK_HEAD_CHARS = 2 * 1024
# What PostgreSQL cannot hold in text or jsonb: NUL (text refuses it; jsonb refuses \u0000) and
# surrogate code points, which never pair up in a Python str and cannot be encoded as UTF-8.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# The longest job key, group_key, debounce key or event key (crontick.signal, job.wait_for), in characters.
# Each sits in a btree index (jobs_key_active; jobs_group_active and jobs_group_running; jobs_debounce_open,
# beside the job's type; job_steps_waiting and crontick_signals_key; crontick_pauses' primary key for a
# paused group), and PostgreSQL refuses an index entry over 2,704 bytes (8 kB pages). A character is at
# most 4 bytes of UTF-8, so 512 characters are at most 2,048 bytes, which fit with each entry's other
# columns whatever the characters (PostgreSQL compresses a long entry, but random text does not shrink;
# 700 such characters fail). Counted in characters, not bytes: what a person counts, and what
# length() counts in sql/functions/enqueue.sql and signal.sql, which check the same number for any driver.
# jobs_debounce_open also holds the type: beside a 2,048-byte key it takes a type of up to about 600 bytes.
KEY_MAX_CHARS = 512
# A key over the bound that came from a sender (an inbound hook's group_key, debounce or signal template
# filled from the event) is kept as its first characters, then "…sha256:" and the whole key's digest:
# exactly KEY_MAX_CHARS long, readable in the admin, and the same for every event of that sender.
_KEY_DIGEST_MARK = "…sha256:"
_KEY_PREFIX_CHARS = KEY_MAX_CHARS - len(_KEY_DIGEST_MARK) - 64


def storable(text: str, max_chars: int = LAST_ERROR_MAX_CHARS) -> str:
    """`text` as PostgreSQL takes it in any text or jsonb column: at most `max_chars` characters (the
    last one then "…"), each NUL and lone surrogate replaced by U+FFFD. Anything crontick stores
    from outside (an exception's message, a provider's answer or id) goes through here first, so one
    odd value cannot fail the statement that records a whole batch."""
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return _UNSTORABLE.sub(REPLACEMENT, text)


def key_too_long(what: str, key: object) -> str | None:
    """The refusal of a string `key` over the bound ("expected <what> of at most 512 characters, got N"), else None."""
    if isinstance(key, str) and len(key) > KEY_MAX_CHARS:
        return f"expected {what} of at most {KEY_MAX_CHARS} characters, got {len(key)}"
    return None


def fit_key(key: str) -> str:
    """`key` if it is within KEY_MAX_CHARS; else its first characters and its SHA-256 (see _KEY_DIGEST_MARK), a
    stable stand-in: one sender's long field maps to one group or debounce key, and two different ones stay apart."""
    if len(key) <= KEY_MAX_CHARS:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return key[:_KEY_PREFIX_CHARS] + _KEY_DIGEST_MARK + digest


def scrub(text: str, secrets: Sequence[str], *, max_chars: int = LAST_ERROR_MAX_CHARS) -> str:
    """Remove every configured secret from error text before it is stored, cap its length, make it storable."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return storable(text, max_chars)


def traceback_of(exc: BaseException) -> str:
    """The traceback Python would print for `exc`, at most TRACEBACK_MAX_CHARS: past that, its middle
    frames give way to a line saying how much was cut (the raise site and the exception are at the end)."""
    import traceback  # only when a handler fails

    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # noqa: BLE001 - a broken __str__ or __traceback__ must not lose the attempt's record
        text = describe(exc) + "\n(its traceback could not be formatted)\n"
    if len(text) <= TRACEBACK_MAX_CHARS:
        return text
    tail = TRACEBACK_MAX_CHARS - _TRACEBACK_HEAD_CHARS - 100
    cut = len(text) - _TRACEBACK_HEAD_CHARS - tail
    return f"{text[:_TRACEBACK_HEAD_CHARS]}\n… {cut} characters of traceback cut …\n{text[-tail:]}"


def describe(exc: BaseException) -> str:
    """'TypeName: message' for error text; never raises, even for an exception whose __str__ does."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a handler's own exception class may be broken; its failure must still be recorded
        message = "(its message could not be read)"
    return f"{type(exc).__name__}: {message}"
