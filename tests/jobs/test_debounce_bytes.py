"""A debounced job's payloads are bounded in bytes too (16 MiB as JSON text, the oldest dropped first), and a debounced
payload over the bound alone is refused, from Python and from the SQL function."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

import crontick
from crontick.jobs.debounce import MAX_PAYLOADS_BYTES
from tests.support.core_jobs import db_now, job_row, tick

# Payloads of about 4,000,000 bytes each: 4 fit the bound, 5 do not.
PAD = 4_000_000
seen: list[list[int]] = []


@crontick.handler("t_debbytes.collect")
def collect(payload: Any, job: crontick.Job) -> None:
    seen.append([p["n"] for p in job.payloads])


def _text_bytes(conn: psycopg.Connection[Any], value: Any) -> int:
    """The payload's size as the bound counts it: its JSON text as PostgreSQL writes it."""
    row = conn.execute("select octet_length(%(v)s::jsonb::text)", {"v": Jsonb(value)}).fetchone()
    assert row is not None
    return int(row[0])


def test_payloads_keep_the_newest_that_fit_16_mib_and_drop_the_oldest(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    debounce = crontick.Debounce("upload:ada", 5)
    size = _text_bytes(conn, {"n": 0, "pad": "x" * PAD})  # each n is one digit
    assert 4 * size <= MAX_PAYLOADS_BYTES < 5 * size
    ids = {
        crontick.enqueue(conn, "t_debbytes.collect", {"n": n, "pad": "x" * PAD}, debounce=debounce) for n in range(6)
    }
    [job_id] = ids
    kept = conn.execute(
        "select array(select (p ->> 'n')::int from jsonb_array_elements(payloads) p), payload ->> 'n', "
        "(select sum(octet_length(p::text)) from jsonb_array_elements(payloads) p) from jobs where id = %(id)s",
        {"id": job_id},
    ).fetchone()
    assert kept == ([2, 3, 4, 5], "5", 4 * size)  # the two oldest dropped, the newest 4 kept
    seen.clear()
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=6)).jobs.succeeded == 1
    assert seen == [[2, 3, 4, 5]]


def test_a_payload_at_the_bound_is_kept_until_the_next_merge_drops_it(conn: psycopg.Connection[Any]) -> None:
    debounce = crontick.Debounce("upload:bob", 5)
    whole = "x" * (MAX_PAYLOADS_BYTES - 2)  # a JSON string of exactly the bound, its quotes included
    assert _text_bytes(conn, whole) == MAX_PAYLOADS_BYTES
    job_id = crontick.enqueue(conn, "t_debbytes.collect", whole, debounce=debounce)
    assert crontick.enqueue(conn, "t_debbytes.collect", {"n": 1}, debounce=debounce) == job_id
    row = job_row(conn, job_id)
    assert (row["payload"], row["payloads"]) == ({"n": 1}, [{"n": 1}])  # the newest is always kept


@pytest.mark.parametrize("merging", [False, True], ids=["first enqueue", "merging enqueue"])
def test_a_debounced_payload_over_16_mib_is_refused(conn: psycopg.Connection[Any], merging: bool) -> None:
    debounce = crontick.Debounce("upload:cy", 5)
    if merging:
        job_id = crontick.enqueue(conn, "t_debbytes.collect", {"n": 0}, debounce=debounce)
    too_big = "x" * (MAX_PAYLOADS_BYTES - 1)  # one byte over, as JSON text
    with pytest.raises(psycopg.errors.StringDataRightTruncation) as info:
        crontick.enqueue(conn, "t_debbytes.collect", too_big, debounce=debounce)
    assert info.value.diag.message_primary == (
        "crontick.enqueue('t_debbytes.collect'): expected a debounced payload of at most 16 MiB (16,777,216 bytes "
        f"as JSON text), got {MAX_PAYLOADS_BYTES + 1} bytes; enqueue it without a debounce, or keep it in your own "
        "storage and pass its key"
    )
    with pytest.raises(psycopg.errors.StringDataRightTruncation):  # the SQL function, as any driver calls it
        conn.execute(
            "select crontick.enqueue('t_debbytes.collect', %(p)s, debounce_key => 'upload:cy', debounce_seconds => 5)",
            {"p": Jsonb(too_big)},
        )
    rows = conn.execute("select payload, payloads from jobs").fetchall()
    assert rows == ([({"n": 0}, None)] if merging else [])  # nothing merged, nothing added
    if merging:
        assert crontick.enqueue(conn, "t_debbytes.collect", too_big) != job_id  # without a debounce: a job of its own
