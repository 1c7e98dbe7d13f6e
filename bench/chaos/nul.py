"""Chaos scenario 12: NUL bytes in workflows. Batches of two-step workflows, one job in five putting a NUL in a step's
result, a step's, sleep's or wait's name or a wait's event key, run by real ticks over HTTP against `crontick serve`.
Each bad value costs only its own job (failed, its last_error saying what was expected); every tick answers 200, and a
local recorder sees each good job's two side effects once, and no bad job's first one twice."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import httpx

from bench.local_http import LocalHandler, LocalServer

from .drain import TICK
from .nul_handlers import BAD_KINDS
from .rig import SECRET, Rig
from .scenario import Row, Sizes

NAME = "12 NUL bytes in workflows"
BAD_EVERY = 5  # one job in five is bad, so every batch mixes them
ENV = {
    "CRONTICK_HANDLERS": "bench.chaos.nul_handlers",
    "CRONTICK_TIME_BUDGET_SECONDS": "2",
    "CRONTICK_LEASE_SECONDS": "3",
    "CRONTICK_BATCH_SIZE": "50",
}


class Recorder(LocalServer):
    """Counts each side effect, by (job id, step), as the step functions post them."""

    def __init__(self) -> None:
        super().__init__(_RecorderHandler)
        self.calls: Counter[tuple[int, str]] = Counter()

    @property
    def url(self) -> str:
        return super().url + "/effect"


class _RecorderHandler(LocalHandler):
    server: Recorder

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        with self.server.lock:
            self.server.calls[(int(body["job_id"]), str(body["step"]))] += 1
        self.send_response(204)
        self.end_headers()


def _open(rig: Rig) -> int:
    return int(rig.sql("select count(*) from jobs where status in ('pending', 'running', 'waiting')")[0][0])


def nul_workflows(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    recorder = Recorder()
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    n = sizes.nul_workflows
    rig.sql(
        "insert into jobs (type, payload) select 'chaos.nul', jsonb_build_object('url', %(url)s::text, 'bad',"
        " case when i %% %(every)s = 0 then (%(kinds)s::text[])[1 + (i / %(every)s) %% %(k)s] end)"
        " from generate_series(1, %(n)s) i",
        {"url": recorder.url, "every": BAD_EVERY, "kinds": list(BAD_KINDS), "k": len(BAD_KINDS), "n": n},
    )
    bad = dict(rig.sql("select id, payload->>'bad' from jobs where payload ? 'bad' and payload->>'bad' is not null"))
    answers: Counter[int] = Counter()
    began = time.monotonic()
    try:
        with rig.serve(ENV) as server, httpx.Client(timeout=30) as client:
            while _open(rig) and time.monotonic() - began < sizes.deadline_seconds:
                answer = client.post(server.base + TICK, headers={"Authorization": f"Bearer {SECRET}"})
                answers[answer.status_code] += 1
                if answer.status_code != 200:
                    time.sleep(1)  # a failed record leaves its batch running until the lease ends
                rig.sql("update jobs set run_after = now() where status = 'pending'")  # retries: due at once
    finally:
        recorder.shutdown()
        recorder.server_close()
    return _verdict(rig, recorder, n, bad, answers, time.monotonic() - began, Row)


def _verdict(
    rig: Rig, recorder: Recorder, n: int, bad: dict[int, str], answers: Counter[int], seconds: float, row: Any
) -> Row:
    ended = {
        job_id: (status, error or "") for job_id, status, error in rig.sql("select id, status, last_error from jobs")
    }
    good = [job_id for job_id in ended if job_id not in bad]
    # Lost: a good job not done with both side effects, or a bad job that did not fail saying what it expected.
    lost_good = sum(
        1
        for job_id in good
        if ended[job_id][0] != "done"
        or not recorder.calls[(job_id, "charge")]
        or not recorder.calls[(job_id, "receipt")]
    )
    unclear_bad = sum(
        1
        for job_id in bad
        if ended[job_id][0] != "failed" or "StepError" not in ended[job_id][1] or "expected" not in ended[job_id][1]
    )
    twice = sum(1 for calls in recorder.calls.values() if calls > 1)
    receipts_of_bad = sum(recorder.calls[(job_id, "receipt")] for job_id in bad)
    not_200 = sum(count for status, count in answers.items() if status != 200)
    ok = not (lost_good or unclear_bad or twice or receipts_of_bad or not_200) and len(ended) == n
    kinds = Counter(bad.values())
    return row(  # type: ignore[no-any-return]
        NAME,
        f"{n:,} two-step workflows, {len(bad)} with a NUL ({', '.join(f'{k} {c}' for k, c in sorted(kinds.items()))}), "
        f"batches of {ENV['CRONTICK_BATCH_SIZE']}, {sum(answers.values())} ticks over HTTP, {seconds:.0f} s",
        f"{len(good) - lost_good:,} good jobs done with each side effect once, {len(bad) - unclear_bad} bad jobs failed "
        f"saying what was expected; {twice} side effects repeated, {receipts_of_bad} past a bad value; ticks answered "
        f"{dict(sorted(answers.items()))}",
        lost=lost_good + unclear_bad,
        duplicated=twice + receipts_of_bad,
        ok=ok,
    )
