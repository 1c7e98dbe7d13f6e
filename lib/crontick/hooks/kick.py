"""Prompt start: after a commit that enqueued due work, start a tick now (in process or over HTTP), coalesced."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from crontick import logs
from crontick.db import query
from crontick.errors import CrontickError
from crontick.jobs import shutdown

if TYPE_CHECKING:
    from crontick.runtime import Runtime
    from crontick.settings import Settings

# A burst's kicks run one after another in a process, never side by side: at most this many
# ticks follow one kick (each tick takes a batch; the rest waits for the scheduled tick).
MAX_TICKS_PER_KICK = 20
# Kicks that arrive while a tick runs make one more tick, started at least this long after the
# previous one: a burst of 500 webhooks in a second starts a handful of ticks, each taking what
# has arrived, while a lone event is still started at once.
MIN_KICK_INTERVAL_SECONDS = 0.25
# The http kick waits this long for the tick's answer, then lets it run on without us: the
# webhook that caused it must answer fast, and on Lambda Mangum holds the answer until we return.
HTTP_KICK_WAIT_SECONDS = 1.0
# At interpreter exit a kick thread still running gets its tick's budget plus this long to finish (its record
# statement, the wake-up booking) before the process goes on exiting without it.
EXIT_MARGIN_SECONDS = 5.0


class Coalescer:
    """One kick runs at a time per process; kicks that arrive meanwhile become one more round."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = False
        self._again = False

    def begin(self) -> bool:
        """True when the caller should run the kick; False when one is running (it will run again)."""
        with self._lock:
            if self._running:
                self._again = True
                return False
            self._running, self._again = True, False
            return True

    def again(self) -> bool:
        """After a round: True to run one more (kicks came in meanwhile); False ends the kick."""
        with self._lock:
            if self._again:
                self._again = False
                return True
            self._running = False
            return False

    def end(self) -> None:
        with self._lock:
            self._running, self._again = False, False

    @property
    def running(self) -> bool:
        return self._running


coalescer = Coalescer()
_runtime: Runtime | None = None
# The kick threads still running (each removes itself when it ends), for wait_for_threads.
_threads: set[threading.Thread] = set()
_threads_lock = threading.Lock()


def attach(runtime: Runtime | None) -> None:
    """The app's runtime, so `crontick.kick()` from user code uses its settings and connection (None: read the env)."""
    global _runtime
    _runtime = runtime


def _wanted(rt: Runtime) -> bool:
    """False when neither a kick nor a wake-up is to start (CRONTICK_KICK=off without a waker, or no database):
    then no thread and no connection starts."""
    return (rt.settings.kick != "off" or rt.settings.waker != "none") and rt.db is not None


async def after_commit(rt: Runtime) -> None:
    """Run (or send) a coalesced kick; never raises: a failed kick only leaves work for the scheduled tick.
    With CRONTICK_KICK=off and a waker set, book a wake-up for now instead (book_now)."""
    mode = rt.settings.kick
    if not _wanted(rt):
        return
    if rt.settings.refuses_ticks:  # a preview deployment: its work waits for production's ticks
        logs.info("kick_skipped", reason="preview deployment (VERCEL_ENV=preview, CRONTICK_ALLOW_PREVIEW unset)")
        return
    if mode == "off":
        await book_now(rt)
        return
    one_round: Callable[[], Awaitable[bool]] = (
        (lambda: _tick_inline(rt)) if mode == "inline" else (lambda: _tick_http(rt.settings))
    )
    await _coalesced(one_round, mode)


async def _coalesced(one_round: Callable[[], Awaitable[bool]], mode: str) -> None:
    if not coalescer.begin():
        return
    rounds = 0
    loop = asyncio.get_running_loop()
    try:
        while True:
            rounds += 1
            started = loop.time()
            more = await one_round()
            if rounds >= MAX_TICKS_PER_KICK or shutdown.begun():  # exiting: no next round (crontick.jobs.shutdown)
                coalescer.end()
                return
            if more:  # a full batch: a backlog is waiting, take the next batch now
                continue
            if not coalescer.again():
                return
            await asyncio.sleep(max(0.0, started + MIN_KICK_INTERVAL_SECONDS - loop.time()))
    except Exception as exc:  # noqa: BLE001 - a kick must never fail the request that caused it
        coalescer.end()
        logs.warning("kick_failed", mode=mode, error=f"{type(exc).__name__}: {exc}")


async def book_now(rt: Runtime) -> None:
    """Kicks are off but a waker is set: book this app's tick for now through the waker
    (crontick.wakers.booking.book_next, with next_due_at = the database's clock), so work made due now (the
    admin's Retry, Run now, a resumed pause; an inbound event; crontick.kick()) does not wait for the safety
    net. One statement (the clock and the bookings, crontick.wakers.ledger.read), then one provider call and one
    statement recording it; an instant booked already (a burst in the same second) makes neither. Never raises:
    a failed booking leaves the work for the next tick.
    """
    from crontick.wakers import booking, ledger

    try:
        async with rt.bounded() as db:  # within the cut-off, as a tick is: a database that hangs costs seconds
            conn = await db.connection()
            now, known = await ledger.read(conn)
            outcome = await booking.book_next(conn, rt.settings, now, now, known=known)
    except Exception as exc:  # noqa: BLE001 - like a kick, a booking must never fail the request that caused it
        logs.warning("kick_failed", mode="waker", error=f"{type(exc).__name__}: {exc}")
        return
    logs.info("kick_booked", provider=outcome.provider, status=outcome.status,
              instant=outcome.instant.isoformat() if outcome.instant else None)  # fmt: skip


async def _tick_inline(rt: Runtime) -> bool:
    result = await rt.run(source="kick")
    return result.jobs.claimed >= rt.settings.batch_size  # a full batch: a backlog is waiting


async def _tick_http(settings: Settings) -> bool:
    """POST this app's own tick URL with a one-use token (signed with CRON_SECRET, audience = public URL)."""
    import httpx

    from crontick.auth.tick import mint_token
    from crontick.http import client

    if not settings.cron_secret or not settings.public_url:
        raise CrontickError(
            "the http kick needs CRON_SECRET and CRONTICK_PUBLIC_URL; the scheduled tick will run the work"
        )
    token = mint_token(settings.cron_secret, settings.public_url)
    # CRONTICK_PUBLIC_URL is where crontick's app is reached, a mount prefix included
    # (https://app.example.com/ops): a kick has no request to learn the prefix from.
    url = settings.public_url + "/api/cron/tick"
    try:
        # Read through the capped reader, as every outbound answer is: a tick's summary is small.
        response = await client.bounded_request(
            "POST", url, headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_KICK_WAIT_SECONDS
        )
    except httpx.ReadTimeout:
        logs.info("kick_sent", mode="http", detail=f"no answer within {HTTP_KICK_WAIT_SECONDS} s; the tick runs on")
        return False
    if not response.is_success:
        raise CrontickError(f"expected 2xx from {url}, got HTTP {response.status_code}: {response.text[:200]}")
    return int(response.json().get("jobs", {}).get("claimed", 0)) >= settings.batch_size


async def kick_async() -> None:
    """After your own transaction commits: start a tick now instead of at the next scheduled one.

    It runs the tick (inline) or sends it (http) before returning, so call it after the
    response where you can (FastAPI/Starlette BackgroundTasks; Vercel waits for those).
    """
    rt = _current_runtime()
    if rt is not None:
        await after_commit(rt)


def kick() -> None:
    """Like kick_async, for sync code (a Django view's transaction.on_commit): runs in a thread, returns at once."""
    rt = _current_runtime()
    if rt is None or not _wanted(rt):
        return
    if coalescer.running:
        coalescer.begin()  # marks one more round for the kick in flight
        return
    _in_thread(rt, None)


class AfterCommit(NamedTuple):
    """What kick_after_commit's thread waits on: the named query `lock` with `params`, which returns once the
    caller's transaction `transaction` (its id, pg_current_xact_id) has ended."""

    lock: str
    params: dict[str, Any]
    transaction: str


# The transactions a kick thread waits for already: one thread (and one connection) per transaction,
# however many signals it sends.
_awaited: set[str] = set()


def kick_after_commit(after: AfterCommit) -> None:
    """kick(), once the caller's open transaction has ended (crontick.signal inside `with conn.transaction()`).

    psycopg has no commit hook, so a thread waits on a connection of its own for the
    transaction-scoped advisory lock that the caller's transaction took (the named query `after.lock`,
    e.g. sql/workflows.sql signal_committed): granted once that transaction commits or rolls back.
    After a rollback the tick finds nothing new, which costs an idle tick. Coalesced per transaction:
    the later calls of a transaction already waited for start nothing, since the one kick after its
    commit runs their work too; with kicks off, nothing starts at all.
    """
    rt = _current_runtime()
    if rt is None or not _wanted(rt):
        return
    with _threads_lock:
        if after.transaction in _awaited:
            return
        _awaited.add(after.transaction)
    _in_thread(rt, after)


def _in_thread(rt: Runtime, after: AfterCommit | None) -> None:
    def run() -> None:
        from crontick.runtime import Runtime

        # A thread has its own event loop, and a connection belongs to one loop: open our own.
        own = Runtime(rt.settings)
        try:
            asyncio.run(_with_close(own, after))
        except Exception as exc:  # noqa: BLE001 - logged; the scheduled tick still runs the work
            logs.warning("kick_failed", mode="thread", error=f"{type(exc).__name__}: {exc}")
        finally:
            with _threads_lock:
                _threads.discard(threading.current_thread())
                if after is not None:
                    _awaited.discard(after.transaction)

    thread = threading.Thread(target=run, name="crontick-kick", daemon=True)
    with _threads_lock:
        _threads.add(thread)
    _finish_at_exit(rt.settings.time_budget_seconds + EXIT_MARGIN_SECONDS)
    thread.start()


_exit_wait_seconds: float | None = None  # set once _at_exit is registered


def _finish_at_exit(seconds: float) -> None:
    """Have the interpreter's exit wait for the kick threads, at most `seconds` (the longest asked for).

    A kick thread is a daemon, which the interpreter stops wherever it is once the main thread has
    returned: a script that enqueued 200 jobs, kicked and exited 0.5 s later left 100 of them `running` with
    an attempt spent, until their lease ran out (issue 35). At exit, before the thread pools a batch runs
    its sync handlers on are shut down (threading's own exit hooks run last registered first, and
    concurrent.futures registers its hook at import, below), _at_exit tells the batch to start no further
    job (crontick.jobs.shutdown): the jobs running finish and are recorded, those not started go back
    pending without spending an attempt, and no follow-up or further round runs.
    """
    global _exit_wait_seconds
    with _threads_lock:
        registered = _exit_wait_seconds is not None
        _exit_wait_seconds = max(seconds, _exit_wait_seconds or 0.0)
    if registered:
        return
    import concurrent.futures.thread  # noqa: F401  registers its exit hook first, so that ours runs before it

    # CPython's hook for "before the threads are joined" (concurrent.futures uses it); atexit runs too late for us.
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # not CPython: the later, plain exit hook still waits for the batch
        import atexit

        register = atexit.register
    register(_at_exit)


def _at_exit() -> None:
    """The interpreter is exiting: start no further job, and wait (bounded) for the kick threads to record theirs."""
    shutdown.begin()
    with _threads_lock:
        running = bool(_threads)
        seconds = _exit_wait_seconds or 0.0
    if running:
        logs.info("kick_exit_wait", detail="the process is exiting: the kick's batch finishes, nothing more starts")
        wait_for_threads(seconds)


async def _with_close(rt: Runtime, after: AfterCommit | None = None) -> None:
    try:
        if after is not None and rt.db is not None:
            conn = await rt.db.connection()
            await conn.execute(query(after.lock), after.params)
            # Granted: the transaction has ended, or the savepoint that took the lock rolled back (which
            # releases it early); a later call of a transaction still open then waits on its own lock.
            with _threads_lock:
                _awaited.discard(after.transaction)
        await after_commit(rt)
    finally:
        if rt.db is not None:
            await rt.db.close()


def wait_for_threads(timeout: float = 10.0) -> None:
    """Join the kick threads still running, and those they start meanwhile, each once (tests, and a
    CLI that exits right after kicking)."""
    joined: set[threading.Thread] = set()
    while True:
        with _threads_lock:
            pending = _threads - joined
        if not pending:
            return
        for thread in pending:
            thread.join(timeout)
        joined |= pending


def _current_runtime() -> Runtime | None:
    """The attached app's runtime, else one read from the environment; None (logged) when misconfigured:
    a kick runs after the caller's commit, so it must never fail the caller."""
    global _runtime
    if _runtime is None:
        from crontick.runtime import Runtime

        _runtime = Runtime(None)
    if _runtime.problem:
        logs.warning("kick_failed", mode="none", error=f"crontick is not configured: {_runtime.problem}")
        return None
    return _runtime
