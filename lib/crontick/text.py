"""Text that crontick stores or shows from outside its own code (errors, provider answers): secrets removed, length capped."""

from __future__ import annotations

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


def storable(text: str, max_chars: int = LAST_ERROR_MAX_CHARS) -> str:
    """`text` as PostgreSQL takes it in any text or jsonb column: at most `max_chars` characters (the
    last one then "…"), each NUL and lone surrogate replaced by U+FFFD. Anything crontick stores
    from outside (an exception's message, a provider's answer or id) goes through here first, so one
    odd value cannot fail the statement that records a whole batch."""
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return _UNSTORABLE.sub(REPLACEMENT, text)


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
