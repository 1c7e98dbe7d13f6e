"""The one wiring of a tick: settings and database loaded once, the cut-off, the tick or drain, and an outage's clean-up.

The ASGI app (`crontick.app`), the kick (`crontick.hooks.kick`), the CLI (`crontick tick`) and
the Lambda handler (`crontick.aws`) all tick through a `Runtime`; none assembles a connection,
a cut-off or a tick of its own. Each maps `DatabaseUnavailable` to its own answer (a 503 with
Retry-After, a log line, exit 1).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from crontick import logs, tracing
from crontick.db import Database, cutoff, queries
from crontick.errors import ConfigError, DatabaseUnavailable
from crontick.settings import REMINDER_CHANNELS, Settings

if TYPE_CHECKING:
    import psycopg

    from crontick.tick.pipeline import TickResult


class Runtime:
    """Settings and the database, loaded once per process (a Vercel or Lambda instance, a CLI run).

    A bad configuration does not raise here: it is kept in `problem` (and logged), so an HTTP
    entry point can answer 503 with the reason on every request instead of failing to start.
    `strict=True` (the CLI) raises the ConfigError instead, for the caller to print once.
    """

    def __init__(self, settings: Settings | None = None, *, strict: bool = False) -> None:
        self.problem: str | None = None
        self.settings = Settings()
        self.db: Database | None = None
        try:
            self.settings = settings or Settings.from_env()
            if self.settings.handler_modules:  # the registry (and its retry policies) only when there are handlers
                from crontick.jobs import registry

                registry.load_modules(self.settings.handler_modules)
            if (loaded := sys.modules.get("crontick.jobs.registry")) is not None:  # handlers registered by the app too
                loaded.check_budget(self.settings.time_budget_seconds)
            chosen = set(self.settings.reminder_channels)
            if chosen - set(REMINDER_CHANNELS) or "django" in chosen:  # registered by the app, or by crontick.django
                from crontick.channels import registry as channels

                channels.check_names(self.settings)
            queries.use_schema(self.settings.schema)
            self.db = Database(self.settings.require_database_url())
        except ConfigError as exc:
            if strict:
                raise
            self.problem = str(exc)
            logs.error("misconfigured", detail=str(exc))

    def database(self) -> Database:
        """The database, or ConfigError with the reason crontick is not configured."""
        if self.problem or self.db is None:
            raise ConfigError(f"crontick is not configured: {self.problem}")
        return self.db

    def bound(self) -> AbstractAsyncContextManager[None]:
        """One step's window with the database: it ends at the cut-off (crontick.db.cutoff)."""
        return cutoff.bounded(self.database(), cutoff.cutoff_of(self.settings))

    @asynccontextmanager
    async def bounded(self) -> AsyncIterator[Database]:
        """`bound()`, and on an outage inside it, this request's connection dropped before DatabaseUnavailable goes on."""
        db = self.database()
        try:
            async with self.bound():
                yield db
        except DatabaseUnavailable as exc:
            await cutoff.discard_after(db, exc)
            raise

    async def tick(
        self, *, source: str, execution_id: str | None = None, delivered: datetime | None = None
    ) -> TickResult:
        """One tick on this request's connection; call it inside `bounded()` (the app authorises in the same window).

        `delivered`: the instant of the wake-up whose delivery this is (crontick.wakers.delivery). When that
        instant was served already (a duplicate delivery, or a retry after it was served), the answer says
        so and no tick runs: one statement.
        """
        from crontick.tick.pipeline import run_tick

        conn = await self.database().connection()
        if delivered is not None:
            delivered, duplicate = await _delivery_check(conn, delivered)
            if duplicate is not None:
                return duplicate
        with tracing.span("crontick tick", {"crontick.tick.source": source}) as span:  # None unless the app traces
            result = await run_tick(conn, self.settings, source=source, execution_id=execution_id, delivered=delivered)
            if span is not None:
                span.set_attributes(_span_counts(result))
        return result

    async def run(
        self, *, source: str, drain: bool = False, max_ticks: int | None = None, delivered: datetime | None = None
    ) -> TickResult:
        """A whole tick (or, with `drain`, ticks until nothing is due or `max_ticks` ran), each step within the cut-off.

        `delivered`: as for `tick` (a Lambda invoked by an EventBridge schedule, a Vercel Queues subscriber)."""
        if not drain:
            async with self.bounded():
                return await self.tick(source=source, delivered=delivered)
        from crontick.tick.drain import drain as drain_ticks

        async with self.bounded() as db:
            conn = await db.connection()
            if delivered is not None:
                delivered, duplicate = await _delivery_check(conn, delivered)
                if duplicate is not None:
                    return duplicate
        limit: dict[str, Any] = {} if max_ticks is None else {"max_ticks": max_ticks}
        limit["delivered"] = delivered
        try:
            with tracing.span("crontick drain", {"crontick.tick.source": source}) as span:
                result = await drain_ticks(conn, self.settings, source=source, bound=self.bound, **limit)
                if span is not None:
                    span.set_attributes(_span_counts(result))
            return result
        except DatabaseUnavailable as exc:
            await cutoff.discard_after(db, exc)
            raise

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()


async def _delivery_check(
    conn: psycopg.AsyncConnection[Any], delivered: datetime
) -> tuple[datetime | None, TickResult | None]:
    """A delivery's instant checked against crontick_wakeups, in one statement: (the instant, None) for a booking of
    this app's not yet served; (None, None) for an instant never booked here (an ordinary tick: it neither records
    nor moves anything); (the instant, the answer without a tick) when it was served already (`wakeup_duplicate`)."""
    from crontick.db.connection import translated
    from crontick.tick.pipeline import TickResult
    from crontick.tick.wakeups_duty import Delivery
    from crontick.wakers import booking

    with translated():
        known, served = await booking.delivery_state(conn, delivered)
    if not known:
        logs.warning("wakeup_instant_unknown", instant=delivered.isoformat())
        return None, None
    if served is None:
        return delivered, None
    logs.info("wakeup_duplicate", instant=delivered.isoformat(), served_at=served.isoformat())
    return delivered, TickResult(delivery=Delivery(delivered, served))


def _span_counts(result: TickResult) -> dict[str, int | bool]:
    """A tick's summary as its span's attributes: crontick.jobs.claimed, crontick.reminders.sent, ..., crontick.more."""
    summary = result.to_json()
    counts: dict[str, int | bool] = {f"crontick.jobs.{k}": v for k, v in summary["jobs"].items()}
    counts.update({f"crontick.reminders.{k}": v for k, v in summary["reminders"].items() if isinstance(v, int)})
    counts["crontick.more"] = bool(summary["more"])
    return counts
