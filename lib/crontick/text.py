"""Text that crontick stores or shows from outside its own code (errors, provider answers, keys): secrets removed, length
capped; and the checks of values an app passes in (a type, a key, a start_by)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from crontick.errors import CrontickError

LAST_ERROR_MAX_CHARS = 2000
# A failed attempt's traceback in its history: the outermost frames and the innermost, the middle cut.
TRACEBACK_MAX_CHARS = 16 * 1024
_TRACEBACK_HEAD_CHARS = 2 * 1024
# What PostgreSQL cannot hold in text or jsonb: NUL (text refuses it; jsonb refuses \u0000) and
# surrogate code points, which never pair up in a Python str and cannot be encoded as UTF-8.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# The longest job key, group_key, debounce key or event key (crontick.signal, job.wait_for), in bytes of UTF-8.
# Each sits in a btree index (jobs_key_active; jobs_group_active and jobs_group_running; jobs_debounce_open,
# beside the job's type; job_steps_waiting and crontick_signals_key; crontick_pauses' primary key for a
# paused group), and PostgreSQL refuses an index entry over 2,704 bytes (8 kB pages). 2,048 bytes fit with
# each entry's other columns whatever the characters: PostgreSQL compresses a long entry, but random text
# does not shrink, and a key of about 2,690 such bytes fails on its own. jobs_debounce_open also holds the
# type: beside a 2,048-byte key there is room for a type of 640 bytes (measured), far past any handler's
# name. Counted in bytes, not characters, so that only keys near what an index can hold are refused: an
# ASCII key of 2,000 characters (a URL, say) is taken, as it was before there was a bound.
# sql/functions/enqueue.sql and signal.sql check the same number with octet_length(), for any driver
# (crontick.db.schema fills it in as {key_max_bytes}).
KEY_MAX_BYTES = 2048
# The longest job type, in bytes of UTF-8: a handler's name, as a schedule's name is at most 200 characters.
# A type sits in btree indexes (jobs_type_status_id, jobs_pending_type_id; jobs_debounce_open beside a
# debounce key of up to KEY_MAX_BYTES, which leaves room for about 640 bytes), so a type of 2.7 kB was taken
# by enqueue and then failed the statement that recorded its whole batch. Checked by @crontick.handler,
# crontick.enqueue, enqueue_many and the SQL enqueue function ({type_max_bytes}).
TYPE_MAX_BYTES = 200
# A key over the bound that came from a sender (an inbound hook's group_key, debounce or signal template
# filled from the event, and any event key given to crontick.signal or job.wait_for) is kept as its first
# characters (cut at a character, never inside one), then "…sha256:" and the whole key's digest: at most
# KEY_MAX_BYTES, readable in the admin, and the same for every event of that sender.
_KEY_DIGEST_MARK = "…sha256:"
_KEY_PREFIX_BYTES = KEY_MAX_BYTES - len(_KEY_DIGEST_MARK.encode()) - 64


def storable(text: str, max_chars: int = LAST_ERROR_MAX_CHARS) -> str:
    """`text` as PostgreSQL takes it in any text or jsonb column: at most `max_chars` characters (the
    last one then "…"), each NUL and lone surrogate replaced by U+FFFD. Anything crontick stores
    from outside (an exception's message, a provider's answer or id) goes through here first, so one
    odd value cannot fail the statement that records a whole batch."""
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return _UNSTORABLE.sub(REPLACEMENT, text)


def _utf8(key: str) -> bytes:
    # surrogatepass: a lone surrogate (which PostgreSQL cannot store anyway) is counted and digested, not raised on.
    return key.encode("utf-8", "surrogatepass")


def key_too_long(what: str, key: object, max_bytes: int = KEY_MAX_BYTES) -> str | None:
    """The refusal of a string `key` over the bound ("expected <what> of at most 2,048 bytes (UTF-8), got N"), else None."""
    if not isinstance(key, str) or len(key) * 4 <= max_bytes:  # at most 4 bytes a character: no need to encode
        return None
    size = len(_utf8(key))
    return f"expected {what} of at most {max_bytes:,} bytes (UTF-8), got {size}" if size > max_bytes else None


def can_store(text: str) -> bool:
    """Whether PostgreSQL takes `text` as it is, in a text column or as a jsonb string: no NUL, no lone surrogate."""
    return _UNSTORABLE.search(text) is None


def text_problem(what: str, text: object, max_bytes: int | None = KEY_MAX_BYTES) -> str | None:
    """Why a string `text` (a key, a name, a job type: what a caller or a sender chose) cannot be stored as it is,
    else None: a NUL or lone surrogate, which would fail the statement that carries it (and, for a step's name or
    a wait's key, the statement of every other job of its batch), or more than `max_bytes` of UTF-8 (see
    key_too_long; None: a caller that fits a long key instead, crontick.text.fit_key)."""
    if isinstance(text, str) and not can_store(text):
        return f"expected {what} without NUL (\\x00) or lone surrogates, got {text!r:.80}"
    return None if max_bytes is None else key_too_long(what, text, max_bytes)


def type_problem(type: object) -> str | None:
    """Why a string `type` cannot be a job type, else None: a NUL or lone surrogate, or more than TYPE_MAX_BYTES."""
    return text_problem("a job type", type, TYPE_MAX_BYTES)


# In JSON text written with ensure_ascii=False: the escape of a NUL (\u0000, which jsonb refuses; an escaped
# backslash before "u0000" is not one) or a surrogate left raw (a lone one, which UTF-8 cannot encode).
_UNSTORABLE_JSON = re.compile(r"(?<!\\)(?:\\\\)*\\u0000|[\ud800-\udfff]")


def json_problem(text: str) -> str | None:
    """Why PostgreSQL's jsonb would refuse the JSON `text` (written by json.dumps with ensure_ascii=False), else None:
    a NUL (\\u0000) or a lone surrogate in one of its strings or keys. One scan, in C; caught before the statement,
    such a value fails only the call that made it, never a statement that carries other jobs' values too."""
    found = _UNSTORABLE_JSON.search(text)
    if found is None:
        return None
    got = "a NUL (\\u0000)" if found.group().endswith("u0000") else "a lone surrogate"
    return f"expected JSON whose strings hold no NUL or lone surrogate (jsonb refuses both), got one with {got}"


def fit_key(key: str) -> str:
    """`key` if it is within KEY_MAX_BYTES; else its first characters and its SHA-256 (see _KEY_DIGEST_MARK), a
    stable stand-in: one sender's long field maps to one key, and two different ones stay apart."""
    if len(key) * 4 <= KEY_MAX_BYTES:
        return key
    encoded = _utf8(key)
    if len(encoded) <= KEY_MAX_BYTES:
        return key
    cut = _KEY_PREFIX_BYTES
    while encoded[cut] & 0xC0 == 0x80:  # a continuation byte: the cut would split a character
        cut -= 1
    prefix = encoded[:cut].decode("utf-8", "surrogatepass")
    return prefix + _KEY_DIGEST_MARK + hashlib.sha256(encoded).hexdigest()


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


# The longest start_by given in seconds (a year): a deadline is about the near future, and a bound keeps the
# database's interval arithmetic far from its limits.
START_BY_MAX_SECONDS = 365 * 86400


def start_by_params(where: str, start_by: Any, run_after: datetime | None = None) -> dict[str, Any]:
    """`start_by` (a timezone-aware datetime, or seconds from now by the database's clock) as the `start_by` and
    `start_by_seconds` parameters of the insert statements, checked: a job not started by then never starts."""
    if start_by is None:
        return {"start_by": None, "start_by_seconds": None}
    if isinstance(start_by, datetime):
        if start_by.tzinfo is None:
            raise CrontickError(f"{where}: expected a timezone-aware start_by, got naive {start_by.isoformat()}")
        if run_after is not None and run_after > start_by:
            raise CrontickError(
                f"{where}: expected run_after at or before start_by (it could never start), got run_after "
                f"{run_after.isoformat()} and start_by {start_by.isoformat()}"
            )
        return {"start_by": start_by, "start_by_seconds": None}
    if (
        isinstance(start_by, bool)
        or not isinstance(start_by, int | float)
        or not 0 < start_by <= START_BY_MAX_SECONDS  # NaN fails this too
    ):
        raise CrontickError(
            f"{where}: expected start_by as a timezone-aware datetime or seconds from now (above 0, at most "
            f"{START_BY_MAX_SECONDS}), got: {start_by!r:.80}"
        )
    return {"start_by": None, "start_by_seconds": float(start_by)}
