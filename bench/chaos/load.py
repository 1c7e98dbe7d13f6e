"""Chaos scenario 1, load: jobs, reminders and signed inbound webhooks drained by parallel callers."""

from __future__ import annotations

import random
import statistics
import threading

from . import webhooks
from .drain import counts, drain_all, seed
from .rig import Rig
from .scenario import Row, Sizes


def load(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    seed(rig, sizes.jobs, sizes.bookings)
    sent = webhooks.deliveries(sizes.events, random.Random(1))
    with rig.serve() as server:
        answers: list[webhooks.Answer] = []
        poster = threading.Thread(target=lambda: answers.extend(webhooks.post_all(server.base, sent)))
        poster.start()  # signed deliveries arrive while the callers tick
        latencies = drain_all(rig, server.base, sizes.callers, sizes.deadline_seconds)
        poster.join()
        latencies += drain_all(rig, server.base, sizes.callers, sizes.deadline_seconds)  # the last events' jobs
        cut = sum(1 for line in server.log_lines() if '"event": "database_unavailable"' in line)
    hooks = webhooks.tally(rig, sizes.events, answers)
    hooks_ok = (
        hooks.accepted == hooks.deliveries
        and hooks.jobs == hooks.new == sizes.events
        and hooks.duplicates == hooks.deliveries - sizes.events
        and not (hooks.lost or hooks.over)
    )
    lost, rerun, r_lost, r_twice = counts(rig, sizes.jobs, sizes.bookings)
    # Ran more often than it was attempted: the same claim ran twice, which would break the queue's
    # promise. Ran again on a later attempt (its first was stopped at the tick's budget after its
    # side effect): at-least-once, as documented.
    over = rig.sql(
        "select count(*) from jobs j where (select count(*) from chaos_side_effects s where s.job_id = j.id) > j.attempts"
    )[0][0]
    unknown = rig.sql("select count(*) from reminder_sends where status = 'unknown'")[0][0]
    once = sum(1 for n in rig.provider.sends.values() if n == 1)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    # An SMS still in flight when its tick's budget ends is 'unknown' (it may have been delivered) and
    # is never resent: visible, not lost. Lost means neither delivered nor marked.
    return Row(
        "1 load",
        f"{sizes.jobs:,} jobs, {sizes.bookings:,} reminders, {sizes.events} signed inbound webhooks "
        f"({len(sent) - sizes.events} sent twice), {sizes.callers} callers, {len(latencies):,} ticks",
        f"jobs: {sizes.jobs - lost - rerun:,} ran exactly once, {rerun} again on a later attempt (at-least-once), "
        f"{over} more often than attempted; reminders: {once:,} delivered once, {unknown} marked unknown, "
        f"{r_twice} twice; {hooks.text()}; tick p50 {q[49]:.0f} ms, p99 {q[98]:.0f} ms; "
        f"requests cut off or refused (503): {cut}",
        lost=lost + max(0, r_lost - unknown) + hooks.lost + max(0, sizes.events - hooks.jobs),
        duplicated=over + r_twice + hooks.over + max(0, hooks.jobs - sizes.events),
        ok=not (lost or over or r_twice) and r_lost <= unknown and hooks_ok,
    )
