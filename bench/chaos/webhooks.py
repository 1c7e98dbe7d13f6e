"""Inbound webhooks for the load scenario: signed GitHub deliveries (some sent twice), posted while ticks run."""

from __future__ import annotations

import json
import random
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from tests.support.credentials import github_signature

from .handlers import GITHUB_HOOK, GITHUB_SECRET
from .rig import Rig

POSTERS = 8  # threads posting at once
MAX_TRIES = 5  # a 503 (the database busy past the cut-off) is retried, as GitHub redelivers


@dataclass(frozen=True)
class Delivery:
    event_id: str  # X-GitHub-Delivery: the dedupe key
    body: bytes


@dataclass(frozen=True)
class Answer:
    event_id: str
    status: int
    duplicate: bool | None
    tries: int
    ms: float


def deliveries(events: int, rng: random.Random) -> list[Delivery]:
    """`events` events, every fifth delivered twice (as a sender retrying after a lost answer), shuffled."""
    once = [
        Delivery(str(uuid.UUID(int=rng.getrandbits(128))), json.dumps({"n": n, "ref": "refs/heads/main"}).encode())
        for n in range(events)
    ]
    sent = once + once[::5]
    rng.shuffle(sent)
    return sent


def _post(client: httpx.Client, base: str, d: Delivery) -> Answer:
    signature = github_signature(GITHUB_SECRET, d.body)
    headers = {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": d.event_id,
        "x-hub-signature-256": signature,
    }
    began = time.monotonic()
    status, duplicate, tries = 0, None, 0
    while tries < MAX_TRIES:
        tries += 1
        try:
            r = client.post(f"{base}/api/hooks/{GITHUB_HOOK}", content=d.body, headers=headers)
        except httpx.TransportError:
            continue
        status = r.status_code
        if status == 200:
            duplicate = bool(r.json().get("duplicate"))
            break
        if status != 503:
            break
        time.sleep(0.2)
    return Answer(d.event_id, status, duplicate, tries, (time.monotonic() - began) * 1000)


def post_all(base: str, sent: list[Delivery]) -> list[Answer]:
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(POSTERS) as pool:
        return list(pool.map(lambda d: _post(client, base, d), sent))


@dataclass(frozen=True)
class Tally:
    events: int
    deliveries: int
    accepted: int  # answered 200
    new: int  # answered duplicate: false
    duplicates: int  # answered duplicate: true
    retried: int  # deliveries that needed more than one try
    jobs: int  # chaos.event jobs in the queue
    once: int  # events whose job ran exactly once
    again: int  # ran again on a later attempt (at-least-once)
    over: int  # ran more often than attempted
    lost: int  # events with no job, or whose job never ran
    p50_ms: float
    p99_ms: float

    def text(self) -> str:
        return (
            f"webhooks: {self.accepted:,}/{self.deliveries:,} deliveries accepted ({self.retried} after a 503), "
            f"{self.new} new + {self.duplicates} duplicates, {self.jobs} jobs for {self.events} events, "
            f"{self.once} ran exactly once, {self.again} again, {self.over} more often than attempted; "
            f"post p50 {self.p50_ms:.0f} ms, p99 {self.p99_ms:.0f} ms"
        )


def tally(rig: Rig, events: int, answers: list[Answer]) -> Tally:
    """Each event's job and its runs, from the queue and the side-effect table."""
    rows = rig.sql(
        "select j.payload->>'event_id', j.attempts, (select count(*) from chaos_side_effects s where s.job_id = j.id) "
        "from jobs j where j.type = 'chaos.event'"
    )
    per_event = {event_id: (attempts, runs) for event_id, attempts, runs in rows}
    wanted = {a.event_id for a in answers}
    q = statistics.quantiles([a.ms for a in answers], n=100) if len(answers) > 1 else [0.0] * 99
    return Tally(
        events=events,
        deliveries=len(answers),
        accepted=sum(1 for a in answers if a.status == 200),
        new=sum(1 for a in answers if a.duplicate is False),
        duplicates=sum(1 for a in answers if a.duplicate is True),
        retried=sum(1 for a in answers if a.tries > 1),
        jobs=len(rows),
        once=sum(1 for _, runs in per_event.values() if runs == 1),
        again=sum(1 for attempts, runs in per_event.values() if 1 < runs <= attempts),
        over=sum(1 for attempts, runs in per_event.values() if runs > attempts),
        lost=sum(1 for e in wanted if per_event.get(e, (0, 0))[1] == 0),
        p50_ms=q[49],
        p99_ms=q[98],
    )
