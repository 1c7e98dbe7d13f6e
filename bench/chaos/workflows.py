"""Chaos scenario 11: three-step workflows (durable steps) drained by `crontick tick --drain` processes that are
killed with SIGKILL every few seconds, sending through a provider that fails 20 % of sends. No step whose result was
recorded runs again, every workflow ends done or failed with a reason, and the provider delivers each send once,
deduplicated by its step key."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from collections import Counter
from typing import Any

from bench.local_http import LocalHandler, LocalServer

from .rig import CRONTICK, Rig
from .scenario import Row, Sizes
from .workflow_handlers import CALLS_SQL

NAME = "11 workflows under kill -9"
TICKS = 2  # `crontick tick --drain` processes at once
FAIL_BEFORE = 0.10  # the provider answers 500 without delivering
FAIL_AFTER = 0.10  # the provider delivers, then answers 500 (the answer lost): the retry must be dropped
MAX_ATTEMPTS = 12
FAST = {"CRONTICK_TIME_BUDGET_SECONDS": "1", "CRONTICK_LEASE_SECONDS": "2", "CRONTICK_BATCH_SIZE": "50"}


class Receiver(LocalServer):
    """A provider on 127.0.0.1 that honours Idempotency-Key: a key it has delivered is answered again, not resent
    (a tick killed mid-request hangs up, a broken pipe or half a body: what this scenario does)."""

    def __init__(self, seed: int) -> None:
        super().__init__(_ReceiverHandler)
        self.rng = random.Random(seed)
        self.delivered: dict[str, int] = {}  # key -> the job id in the body it delivered
        self.repeats: Counter[str] = Counter()  # a key sent again after it was delivered: dropped
        self.failed = 0
        self.sends = 0

    @property
    def url(self) -> str:
        return super().url + "/send"


class _ReceiverHandler(LocalHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        key = self.headers.get("idempotency-key") or ""
        s = self.server
        with s.lock:
            s.sends += 1
            roll = s.rng.random()
            if roll < FAIL_BEFORE:
                s.failed += 1
                return self.answer(500, b'{"error": "provider down"}')
            if key in s.delivered:
                s.repeats[key] += 1
            else:
                s.delivered[key] = int(body["job_id"])
            if roll < FAIL_BEFORE + FAIL_AFTER:
                s.failed += 1
                return self.answer(500, b'{"error": "answer lost"}')
        return self.answer(200, json.dumps({"id": f"msg-{key}"}).encode())


def _spawn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(CRONTICK), "tick", "--drain"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def drain_under_kills(rig: Rig, env: dict[str, str], sizes: Sizes, rng: random.Random, types: tuple[str, ...]) -> int:
    """TICKS `crontick tick --drain` processes (with `env`) over the jobs of `types`, one of them SIGKILLed every
    sizes.workflow_kill_every seconds (mid-batch, mid-step, mid-record), up to sizes.kills times; then, with no more
    kills, drains to the end once every lease a killed process held has expired. Returns the kills."""

    def open_jobs() -> int:
        found = rig.sql(
            "select count(*) from jobs where type = any(%s) and status in ('pending', 'running')", (list(types),)
        )
        return int(found[0][0])

    began = time.monotonic()
    kills = 0
    ticks = [_spawn(env) for _ in range(TICKS)]
    try:
        next_kill = time.monotonic() + rng.uniform(*sizes.workflow_kill_every)
        while kills < sizes.kills and time.monotonic() - began < sizes.deadline_seconds:
            time.sleep(0.1)
            if not open_jobs():
                break
            ticks = [t if t.poll() is None else _spawn(env) for t in ticks]  # a drain that finished starts again
            if time.monotonic() >= next_kill:
                rng.choice(ticks).kill()
                kills += 1
                next_kill = time.monotonic() + rng.uniform(*sizes.workflow_kill_every)
        for t in ticks:
            t.kill()
            t.wait(10)
        time.sleep(float(env["CRONTICK_LEASE_SECONDS"]) + 0.5)  # every lease a killed process held expires
        deadline = time.monotonic() + sizes.deadline_seconds
        while open_jobs() and time.monotonic() < deadline:  # no more kills: drain to the end
            rig.sql("update jobs set run_after = now() where status = 'pending'")
            subprocess.run(
                [str(CRONTICK), "tick", "--drain"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=120,
            )
    finally:
        for t in ticks:
            if t.poll() is None:
                t.kill()
    return kills


def workflows(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    rig.sql(CALLS_SQL)
    rig.sql("truncate chaos_step_calls, job_steps")
    receiver = Receiver(11)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    n = sizes.workflows
    rig.sql(
        "insert into jobs (type, payload, max_attempts) "
        "select 'chaos.workflow', jsonb_build_object('url', %s::text), %s from generate_series(1, %s)",
        (receiver.url, MAX_ATTEMPTS, n),
    )
    began = time.monotonic()
    env = rig.env(CRONTICK_HANDLERS="bench.chaos.workflow_handlers", **FAST)
    try:
        kills = drain_under_kills(rig, env, sizes, random.Random(11), ("chaos.workflow",))
    finally:
        receiver.shutdown()
        receiver.server_close()
    seconds = time.monotonic() - began
    return _verdict(rig, receiver, n, kills, seconds, Row)


def _verdict(rig: Rig, receiver: Receiver, n: int, kills: int, seconds: float, row: Any) -> Row:
    statuses = dict(rig.sql("select status, count(*) from jobs where type = 'chaos.workflow' group by status"))
    done, failed = statuses.get("done", 0), statuses.get("failed", 0)
    unclear = rig.sql(
        "select count(*) from jobs where type = 'chaos.workflow' and (status not in ('done', 'failed')"
        " or (status = 'failed' and coalesce(last_error, '') = ''))"
    )[0][0]
    # A call that began after its step's result was recorded: a recorded step run again (must be 0).
    after_recorded = rig.sql(
        "select count(*) from chaos_step_calls c join job_steps s on s.job_id = c.job_id and s.name = c.step"
        " where c.called_at > s.created_at"
    )[0][0]
    # Calls before the result was recorded, more than one: the function finished (or was killed) and its
    # result was not recorded, so it ran again (at-least-once, what step_key is for).
    again = rig.sql(
        "select coalesce(sum(calls - 1), 0) from (select count(*) as calls from chaos_step_calls"
        " group by job_id, step) c where calls > 1"
    )[0][0]
    calls = rig.sql("select count(*) from chaos_step_calls")[0][0]
    steps = rig.sql("select count(*) from job_steps where kind = 'step'")[0][0]
    # Every done workflow's send: its recorded key delivered once, for that job, and no job with a second key.
    recorded = dict(rig.sql("select job_id, result->>'key' from job_steps where name = 'send' and status = 'done'"))
    keys_per_job = Counter(receiver.delivered.values())
    undelivered = sum(1 for job, key in recorded.items() if receiver.delivered.get(key) != job)
    twice = sum(1 for c in keys_per_job.values() if c > 1)
    repeats = sum(receiver.repeats.values())
    ok = not (unclear or after_recorded or undelivered or twice) and done + failed == n
    return row(  # type: ignore[no-any-return]
        NAME,
        f"{n:,} three-step workflows, {kills} kill -9 of {TICKS} `tick --drain` processes, a provider failing "
        f"{FAIL_BEFORE + FAIL_AFTER:.0%} of {receiver.sends:,} sends ({receiver.failed:,}), {seconds:.0f} s",
        f"{done:,} done, {failed} failed with a reason, {unclear} neither; {steps:,} steps recorded, "
        f"{calls:,} step calls, {after_recorded} after their result was recorded, {again} again before it was "
        f"(killed or failed between call and record: at-least-once); receiver: {len(receiver.delivered):,} "
        f"delivered, {repeats} repeats dropped by step key, {twice} jobs delivered twice, {undelivered} sends "
        "recorded but not delivered",
        lost=unclear + undelivered,
        duplicated=after_recorded + twice,
        ok=ok,
    )
