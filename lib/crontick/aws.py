"""AWS Lambda entry point: HTTP events go to the app through Mangum; scheduled events run ticks directly."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from crontick.errors import CrontickError

if TYPE_CHECKING:
    from crontick.runtime import Runtime

SCHEDULE_SOURCES = frozenset({"aws.events", "aws.scheduler"})
# What a scheduled invocation keeps in hand after its last tick: Lambda kills the function at its
# timeout, so a tick is started only while a whole time budget plus this margin remains.
LAMBDA_MARGIN_SECONDS = 5.0
MAX_TICKS_PER_INVOCATION = 50


class UnsupportedEvent(CrontickError):
    """The handler was invoked with an event that is neither HTTP nor a schedule."""

    def __init__(self, event: object) -> None:
        super().__init__(
            "crontick.aws.handler: expected an HTTP event (Lambda Function URL, API Gateway REST or HTTP API) "
            'or a scheduled event ({"detail-type": "Scheduled Event", "source": "aws.scheduler" or "aws.events"}, '
            f'or {{"crontick": "tick"}}), got: {_describe(event)}'
        )


def _describe(event: object) -> str:
    """The event's shape, never its values (they may carry headers with credentials)."""
    if isinstance(event, dict):
        keys = sorted(str(k) for k in event)
        return f"an object with keys {keys[:12]}" if keys else "an empty object"
    return f"a {type(event).__name__}"


def event_kind(event: object) -> str | None:
    """'http', 'schedule', or None for anything else."""
    if not isinstance(event, dict):
        return None
    if "requestContext" in event:
        return "http"
    if event.get("detail-type") == "Scheduled Event" and event.get("source") in SCHEDULE_SOURCES:
        return "schedule"
    if event.get("crontick") == "tick":  # `aws lambda invoke`, or a Scheduler target with this Input
        return "schedule"
    return None


class LambdaRuntime:
    """What one Lambda instance keeps warm: one event loop, the app (with its connection), the adapter."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app: Any = None
        self._mangum: Any = None

    def handle(self, event: object, context: Any) -> dict[str, Any]:
        kind = event_kind(event)
        if kind == "http":
            return self._http(event, context)
        if kind == "schedule":
            return self.loop().run_until_complete(self._scheduled(event, context))
        raise UnsupportedEvent(event)

    def loop(self) -> asyncio.AbstractEventLoop:
        # One loop for the life of the instance: the pooled connection and HTTP client belong to it,
        # and Mangum runs each request on asyncio.get_event_loop(), which asyncio.run() would unset.
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        return self._loop

    def app(self) -> Any:
        if self._app is None:
            from crontick.app import create_app

            self._app = create_app()
        return self._app

    def _http(self, event: Any, context: Any) -> dict[str, Any]:
        self.loop()
        if self._mangum is None:
            from mangum import Mangum

            # lifespan="off": otherwise startup and shutdown would run around every invocation.
            self._mangum = Mangum(self.app(), lifespan="off")
        try:
            response: dict[str, Any] = self._mangum(event, context)
        except RuntimeError as exc:  # Mangum could not infer the HTTP flavour
            raise UnsupportedEvent(event) from exc
        return response

    async def _scheduled(self, event: Any, context: Any) -> dict[str, Any]:
        """IAM already authenticated the caller; tick (and keep ticking while time remains). An EventBridge
        Scheduler wake-up (crontick.wakers.eventbridge) names its instant in the event (crontick.wakers.delivery)."""
        runtime: Runtime = self.app().state.runtime
        runtime.database()  # ConfigError, with the reason, when crontick is not configured
        ticks = _ticks_that_fit(context, runtime.settings.time_budget_seconds)
        delivered = None
        if "instant" in event:
            from crontick.wakers.delivery import delivered_instant

            delivered = delivered_instant(event)
        result = await runtime.run(source="eventbridge", drain=True, max_ticks=ticks, delivered=delivered)
        return result.to_json()

    def close(self) -> None:
        """Close the connection and the loop (tests; Lambda itself just freezes the instance)."""
        if self._loop is None or self._loop.is_closed():
            return
        if self._app is not None and self._app.state.runtime.db is not None:
            self._loop.run_until_complete(self._app.state.runtime.db.close())
        self._loop.close()


def _ticks_that_fit(context: Any, budget_seconds: float) -> int:
    """How many ticks of `budget_seconds` fit in what is left of this invocation (at least one)."""
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if remaining_ms is None:
        return 1
    usable = remaining_ms() / 1000 - LAMBDA_MARGIN_SECONDS
    return max(1, min(MAX_TICKS_PER_INVOCATION, int(usable // budget_seconds)))


_runtime = LambdaRuntime()


def handler(event: object, context: Any) -> dict[str, Any]:
    """The Lambda handler: `crontick.aws.handler`."""
    return _runtime.handle(event, context)
