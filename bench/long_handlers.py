"""The handlers `bench/long_work.py` measures: the 20,000-row import as a job.map of 500-row chunks, a 200-item
job.map, and the seeds' reply pipeline (an LLM step, then a Twilio send declared at_most_once). Every outside call
goes to the bench's local fake (bench/long_work.py, Fakes), which takes as long as the real one and counts calls."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import httpx
import psycopg

import crontick

IMPORT_TYPE = "bench.import_people"
MAP_TYPE = "bench.map_items"
REPLY_TYPE = "bench.autoreply"
CHUNK_ROWS = 500
PEOPLE_SQL = "create table if not exists bench_people (n int primary key, name text not null)"
database_url = [""]  # the bench's database, set by bench/long_work.py before any tick runs
# One client per event loop (each tick runs its own): a new httpx client per call costs more than the fake's answer.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


async def _call(url: str, route: str, key: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = _clients[loop] = httpx.AsyncClient(timeout=30)
    r = await client.post(f"{url}/{route}", json={"key": key})
    r.raise_for_status()
    answer: dict[str, Any] = r.json()
    return answer


@crontick.step(timeout_seconds=1)  # a 0.25 s call and 500 rows: never started on the budget's last second
async def insert_chunk(chunk: dict[str, Any]) -> int:
    """Enrich one chunk (a call to the fake), then insert its rows: one recorded step of the import's map."""
    await _call(chunk["url"], "enrich", f"chunk-{chunk['first']}")
    async with await psycopg.AsyncConnection.connect(database_url[0], autocommit=True) as conn:
        cur = await conn.execute(
            "insert into bench_people (n, name) select g, 'person ' || g from generate_series(%s::int, %s::int) g",
            (chunk["first"], chunk["last"]),
        )
    return cur.rowcount


@crontick.handler(IMPORT_TYPE)
async def import_people(payload: Any, job: crontick.Job) -> int:
    rows, url = payload["rows"], payload["url"]
    chunks = [
        {"url": url, "first": first, "last": min(first + CHUNK_ROWS, rows) - 1} for first in range(0, rows, CHUNK_ROWS)
    ]
    inserted = await job.map("insert", insert_chunk, chunks)
    return sum(inserted)


@crontick.step(timeout_seconds=1)
async def call_item(item: dict[str, Any]) -> str:
    answer = await _call(item["url"], "item", f"item-{item['i']}")
    return str(answer["key"])


@crontick.handler(MAP_TYPE)
async def map_items(payload: Any, job: crontick.Job) -> None:
    await job.map("items", call_item, [{"url": payload["url"], "i": i} for i in range(payload["items"])])


@crontick.step(timeout_seconds=3)  # the fake LLM answers in 2 s: never started with less than 3 s left
async def ask_llm(url: str, key: str) -> str:
    return str((await _call(url, "llm", key))["key"])


@crontick.step(timeout_seconds=2, at_most_once=True)  # the fake Twilio takes 1 s; a reply must never go twice
async def send_whatsapp(url: str, key: str) -> str:
    return str((await _call(url, "twilio", key))["key"])


@crontick.handler(REPLY_TYPE)
async def autoreply(payload: Any, job: crontick.Job) -> None:
    reply = await job.step("llm", ask_llm, payload["url"], f"reply-{payload['n']}")
    await job.step("send", send_whatsapp, payload["url"], reply)
