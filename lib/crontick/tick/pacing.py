"""What one process remembers from tick to tick to pace what its next probe asks: a small object, not module globals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class Pacing:  # not a dataclass: every tick's cold start imports this module
    """A process's memory between ticks; its ticks share PROCESS unless a caller (a test) passes its own.

    Only for pacing what the process decides before a probe answers (whether to look for a silence or
    expired rows, when a follow-up tick wakes); every comparison with rows uses the probe's time.
    """

    __slots__ = ("db_ahead", "last_finished_at", "retention_from", "retention_paused_at", "retention_owed")

    def __init__(self) -> None:
        # How far the database's clock is ahead of this host's (negative: behind), as of the last probe.
        self.db_ahead = timedelta(0)
        # When the last recorded tick finished. While that is less than the silence threshold ago, no
        # tick can follow a silence, so the probe skips that check (crontick.tick.silence_duty).
        self.last_finished_at: datetime | None = None
        # Retention (crontick.tick.retention): no look for expired rows before retention_from, unless
        # the clock went back past retention_paused_at; retention_owed: a full batch of a table the
        # probe does not look at, so the next tick deletes again without waiting for the probe.
        self.retention_from: datetime | None = None
        self.retention_paused_at: datetime | None = None
        self.retention_owed = False

    def estimated_now(self) -> datetime:
        """The database's time as this process last saw it, moved on by this host's clock since."""
        return datetime.now(UTC) + self.db_ahead

    def reset(self) -> None:
        """Forget everything (tests, and a process that knows it just made rows expire)."""
        self.__init__()  # type: ignore[misc]


# This process's: crontick.tick.pipeline.run_tick uses it unless given another.
PROCESS = Pacing()
