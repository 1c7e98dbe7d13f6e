"""The exceptions crontick raises, under one root, each building its own message."""

from __future__ import annotations

import re


class CrontickError(Exception):
    """Root of every error crontick raises on purpose."""


class ConfigError(CrontickError):
    """A setting is missing or malformed; the message says which and how to fix it."""


class DatabaseUnavailable(CrontickError):
    """PostgreSQL could not be reached or dropped the connection."""

    def __init__(self, cause: BaseException) -> None:
        # psycopg's message can include the host and user but never the password,
        # which it does not echo; keep only its first line.
        super().__init__(f"database unavailable: {_first_line(cause)}")


class DatabaseTimeout(DatabaseUnavailable):
    """The database gave no answer by a request's cut-off (crontick.db.cutoff)."""

    def __init__(self, seconds: float) -> None:
        CrontickError.__init__(
            self,
            f"database unavailable: expected an answer within {seconds:.3g} s, got none "
            "(a pooler waiting for a server that is down or for a free one, or a statement blocked in the database)",
        )


class DatabaseUrlError(ConfigError):
    """DATABASE_URL cannot be parsed. psycopg's reason is kept; the password, which it may quote, is not."""

    def __init__(self, url: str, cause: BaseException) -> None:
        reason = _first_line(cause)
        for match in _PASSWORD.finditer(url):
            password = (match.group(1) or match.group(2) or "").strip("'")
            if password:
                reason = reason.replace(password, "[redacted]")
        super().__init__(
            "DATABASE_URL: expected a PostgreSQL URL such as postgresql://user:pass@host:5432/db (percent-encode "
            f"spaces and @ in the password), got one psycopg rejects: {reason}"
        )


# The password of `scheme://user:password@host` (up to the last @, which is what the parser
# trips over), of the same without a scheme, or of the key=value form `password=...`.
_PASSWORD = re.compile(r"^(?:[A-Za-z][\w+.-]*://)?[^:/?#@\s]*:(.*)@|password\s*=\s*('[^']*'|\S+)", re.DOTALL)


class Refused(CrontickError):
    """A credential or signature check failed (a tick's auth, an inbound hook's verifier).

    The message names the check that failed. It is for the log only, never for the caller,
    and never holds the credential or a secret.
    """


class PermanentError(CrontickError):
    """Raised by a handler: the job can never succeed, so it fails at once without retries."""


class PayloadError(PermanentError):
    """A job's payload does not have the shape its handler expects."""

    def __init__(self, job_type: str, expected: str, got: object) -> None:
        super().__init__(f"{job_type}: expected payload {expected}, got: {_short(got)}")


class RetryableError(CrontickError):
    """Raised by a handler to ask for a retry with an explicit reason (same as any exception).

    `retry_after_seconds` (a provider's Retry-After) makes the retry wait at least that long
    when it is longer than the next backoff step.
    """

    def __init__(self, message: str, *, retry_after_seconds: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class Snooze(CrontickError):
    """Raised by a handler: put the job back to pending, due after `seconds`, without counting the attempt.

    For work that waits on someone else (a batch API still running, a provider's rate limit).
    Snoozes per job are bounded (crontick.jobs.decision.MAX_SNOOZES); past that, a snooze counts as a
    failed attempt.
    """

    def __init__(self, seconds: float) -> None:
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SNOOZE_SECONDS:
            raise ValueError(f"crontick.Snooze: expected seconds between 0 and {MAX_SNOOZE_SECONDS}, got: {seconds!r}")
        super().__init__(f"snoozed for {seconds:g} s")
        self.seconds = float(seconds)


MAX_SNOOZE_SECONDS = 30 * 86400


class StepError(PermanentError):
    """A durable step used wrongly (crontick.workflows): a name used twice in one run, a result that is not JSON
    or is too big, a bad sleep or wait. The job fails at once, naming the step: running it again would not help."""


class Cancelled(CrontickError):
    """Raised inside a running handler by its next job.step, job.sleep or job.wait_for once crontick.cancel asked its
    job to stop: the job ends `cancelled` (not failed), with no alert and no retry."""


class StepFenced(CrontickError):
    """A step finished after its job's attempt was taken over (rescued after its lease): its result is not recorded,
    and the handler stops here; the attempt that took over runs the step again."""


def _first_line(cause: BaseException) -> str:
    text = str(cause).strip()
    return text.splitlines()[0] if text else type(cause).__name__


def _short(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class QueryTimeout(CrontickError):
    """An admin read or action ran past its statement_timeout; the panel shows "unavailable"."""

    def __init__(self, what: str, timeout: str) -> None:
        super().__init__(f"{what}: expected an answer within {timeout}, got a statement timeout (narrow the filter)")


class BadCursor(CrontickError):
    """A pagination cursor that crontick did not issue (or that was edited)."""

    def __init__(self, cursor: str) -> None:
        super().__init__(f"cursor: expected a next_cursor value from a previous page, got: {_short(cursor, 60)}")


class ReminderSourceError(CrontickError):
    """The reminder source (CRONTICK_REMINDER_SOURCE) lacks a column or cannot be read: one line naming
    the source and the column, from `crontick migrate` and from the tick (503 `reminder_source`)."""
