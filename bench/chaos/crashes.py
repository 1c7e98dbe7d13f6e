"""Chaos scenarios 2, 3 and 7, processes that die: kill -9 at random moments, a tick frozen past its leases,
and poison jobs (raise, hang, garbage, sys.exit, payloads Python cannot decode)."""

from __future__ import annotations

import random
import signal
import threading
import time

import httpx

from .drain import TICK, bearer, counts, drain, drain_all, seed
from .rig import SECRET, Rig
from .scenario import Row, Sizes

# --- 2. kill -9 ---------------------------------------------------------------------------------


def kill9(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    seed(rig, sizes.jobs, sizes.bookings)
    rng = random.Random(2)
    fast = {"CRONTICK_TIME_BUDGET_SECONDS": "1", "CRONTICK_LEASE_SECONDS": "2", "CRONTICK_BATCH_SIZE": "50"}
    for _ in range(sizes.kills):
        with rig.serve(fast) as server:
            killer = threading.Timer(rng.uniform(0.2, 1.5), server.kill9)
            killer.start()
            drain(server.base, 4, 3.0)
            killer.join()
    time.sleep(2.5)  # every lease held by a killed process expires
    with rig.serve(fast) as server:
        drain_all(rig, server.base, 2, sizes.deadline_seconds)  # rescued jobs' backoff is moved back each round
    stuck = rig.sql("select count(*) from jobs where status in ('pending', 'running')")[0][0]
    over = rig.sql(
        "select count(*) from jobs j where (select count(*) from chaos_side_effects s where s.job_id = j.id) > j.attempts"
    )[0][0]
    failed = rig.sql("select count(*) from jobs where status = 'failed' and last_error is not null")[0][0]
    lost, twice, r_lost, r_twice = counts(rig, sizes.jobs, sizes.bookings)
    lost -= failed  # a job whose attempts all died with their process ends visibly failed: not lost
    unknown = rig.sql("select count(*) from reminder_sends where status = 'unknown'")[0][0]
    delivered = sum(1 for n in rig.provider.sends.values() if n >= 1)
    # A reminder killed mid-send ends 'unknown' (visible, never resent): not lost, not sent twice.
    ok = not (stuck or over or lost or r_twice) and r_lost <= unknown
    return Row(
        "2 kill -9",
        f"{sizes.kills} kills at random moments, {sizes.jobs:,} jobs, {sizes.bookings:,} reminders",
        f"drained: {stuck} left pending/running, {over} with runs > attempts, {failed} failed visibly, "
        f"{twice} re-run after a kill (at-least-once); reminders {delivered} delivered, {unknown} marked unknown",
        lost=max(0, lost) + max(0, r_lost - unknown),
        duplicated=r_twice,
        ok=ok,
    )


# --- 3. a frozen process -------------------------------------------------------------------------


def frozen(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    n = 10
    rig.sql("insert into jobs (type, payload) select 'chaos.stale', '{\"sleep\": 2}' from generate_series(1, %s)", (n,))
    env = {"CRONTICK_TIME_BUDGET_SECONDS": "3", "CRONTICK_LEASE_SECONDS": "4"}
    answers: list[httpx.Response] = []
    with rig.serve(env) as a, rig.serve(env) as b:
        first = threading.Thread(
            target=lambda: answers.append(httpx.post(a.base + TICK, headers=bearer(SECRET), timeout=60))
        )
        first.start()
        time.sleep(0.5)
        a.proc.send_signal(signal.SIGSTOP)  # mid-handler, holding the leases of its batch
        try:
            time.sleep(4.5)  # past the lease
            drain_all(rig, b.base, 1, 30)  # B rescues and runs them
        finally:
            a.proc.send_signal(signal.SIGCONT)
        first.join(60)
    done = rig.sql("select count(*) from jobs where status = 'done' and last_error is null")[0][0]
    stale_jobs = answers[0].json()["jobs"] if answers and answers[0].status_code == 200 else {}
    fenced = stale_jobs.get("fenced", 0)
    # The thawed tick wakes past its cut-off (which comes before its leases end): it is cut off
    # before it writes anything, unless its outcome statement was already on its way; then the
    # fence refuses every late outcome. Either way the new owner's `done` (no last_error) stands.
    cut_off = bool(answers) and answers[0].status_code == 503 and answers[0].json()["error"] == "database_unavailable"
    thawed = "was cut off (503; its cut-off had passed)" if cut_off else f"had its {fenced} late outcomes fenced off"
    lost, twice, _, _ = counts(rig, n, 0, "chaos.stale")  # the stale handler records only its successful attempt
    ok = done == n and not twice and (cut_off or fenced == stale_jobs.get("claimed", -1) == n) and not lost
    return Row(
        "3 frozen process",
        f"SIGSTOP a tick holding {n} leases for 4.5 s (lease 4 s), SIGCONT after another server took over",
        f"{done}/{n} done by the new owner; the thawed tick {thawed}",
        lost=lost,
        duplicated=twice,
        ok=ok,
    )


# --- 7. poison jobs -----------------------------------------------------------------------------


def poison(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    deep = '{"d": ' * 2000 + "{}" + "}" * 2000  # deeper than Python's json module can parse (recursion limit)
    poison_types = ["chaos.raise", "chaos.hang", "chaos.garbage", "chaos.exit", "no.such.type"]
    for t in poison_types:
        rig.sql("insert into jobs (type, payload, max_attempts) values (%s, '{}', 1)", (t,))
    rig.sql(
        "insert into jobs (type, payload, max_attempts) values ('chaos.inspect', jsonb_build_object('big', repeat('x', 1000000)), 1)"
    )
    rig.sql("insert into jobs (type, payload, max_attempts) values ('chaos.inspect', %s::jsonb, 1)", (deep,))
    good = max(10, sizes.jobs // 10)
    rig.sql("insert into jobs (type, payload) select 'chaos.record', '{}' from generate_series(1, %s)", (good,))
    with rig.serve({"CRONTICK_TIME_BUDGET_SECONDS": "3"}) as server:
        drain_all(rig, server.base, 2, sizes.deadline_seconds)
        alive = httpx.get(server.base + "/api/health").status_code == 200
    rows = rig.sql(
        "select type, status, coalesce(last_error, ''), payload ? 'big' from jobs where type <> 'chaos.record' order by id"
    )
    # A handler's return value is ignored (garbage succeeds); every other poison ends failed with a reason,
    # the deep payload included (Python cannot decode it); the 1 MB payload runs.
    expected = {t: "failed" for t in poison_types} | {"chaos.garbage": "done"}
    unclear = [
        t
        for t, status, err, big in rows
        if (t in expected and (status != expected[t] or (status == "failed" and not err)))
        or (t == "chaos.inspect" and status != ("done" if big else "failed"))
    ]
    poisoned_ok = inspected_ok = not unclear
    lost, twice, _, _ = counts(rig, good, 0)
    return Row(
        "7 poison jobs",
        f"{len(poison_types)} poison types (raise, hang, garbage, sys.exit, unknown), 1 MB and "
        f"2,000-deep payloads, {good} good jobs",
        f"garbage done, deep failed, 1 MB done, the rest failed with a last_error; "
        f"off: {unclear or 'none'}; good jobs all ran; server alive: {alive}",
        lost=lost + len(unclear),
        duplicated=twice,
        ok=poisoned_ok and inspected_ok and alive and not lost and not twice,
    )
