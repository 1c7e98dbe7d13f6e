"""The exceptions crontick raises, under one root, each building its own message."""

from __future__ import annotations


class CrontickError(Exception):
    """Root of every error crontick raises on purpose."""


class ConfigError(CrontickError):
    """A setting is missing or malformed; the message says which and how to fix it."""


class DatabaseUnavailable(CrontickError):
    """PostgreSQL could not be reached or dropped the connection."""

    def __init__(self, cause: BaseException) -> None:
        # psycopg's message can include the host and user but never the password,
        # which it does not echo; keep only its first line.
        first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        super().__init__(f"database unavailable: {first_line}")


class PermanentError(CrontickError):
    """Raised by a handler: the job can never succeed, so it fails at once without retries."""


class PayloadError(PermanentError):
    """A job's payload does not have the shape its handler expects."""

    def __init__(self, job_type: str, expected: str, got: object) -> None:
        super().__init__(f"{job_type}: expected payload {expected}, got: {_short(got)}")


class RetryableError(CrontickError):
    """Raised by a handler to ask for a retry with an explicit reason (same as any exception)."""


def _short(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
