"""What a caller hands to enqueue, enqueue_many, crontick.signal, a handler, a schedule or a hook that PostgreSQL could
not store (a NUL, a lone surrogate) or index (a job type over crontick.text.TYPE_MAX_BYTES) is refused at the call,
with an "expected ..., got ..." error, before any statement: the caller's transaction goes on."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import ConfigError, CrontickError
from crontick.text import TYPE_MAX_BYTES

NUL_TEXT = "expected {} without NUL (\\x00) or lone surrogates, got "
NUL_JSON = "payload: expected JSON whose strings hold no NUL or lone surrogate (jsonb refuses both), got one with "
LONG_TYPE = "t_unstorable." + "x" * 2700  # about 2.7 kB: taken once, then it failed its batch's record statement


def _jobs(conn: psycopg.Connection[Any]) -> int:
    return conn.execute("select count(*) from jobs").fetchone()[0]  # type: ignore[index,no-any-return]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"type": "t_unstorable.\x00"}, "enqueue: " + NUL_TEXT.format("a job type")),
        ({"key": "order:\x00"}, "enqueue('t_unstorable.ok'): " + NUL_TEXT.format("key")),
        ({"group_key": "conv:\udc80"}, "enqueue('t_unstorable.ok'): " + NUL_TEXT.format("group_key")),
        ({"payload": {"text": "a\x00b"}}, "enqueue('t_unstorable.ok'): " + NUL_JSON + "a NUL (\\u0000)"),
        ({"payload": {"\x00": 1}}, "enqueue('t_unstorable.ok'): " + NUL_JSON + "a NUL (\\u0000)"),
        ({"payload": ["\ud800"]}, "enqueue('t_unstorable.ok'): " + NUL_JSON + "a lone surrogate"),
        ({"payload": {"x": float("nan")}}, "enqueue('t_unstorable.ok'): expected a JSON payload, got dict: "),
    ],
)
def test_enqueue_refuses_what_postgresql_cannot_store_and_the_callers_transaction_goes_on(
    conn: psycopg.Connection[Any], call: dict[str, Any], expected: str
) -> None:
    args: dict[str, Any] = {"type": "t_unstorable.ok", "payload": {}} | call
    with conn.transaction():
        with pytest.raises(CrontickError, match="^" + re.escape(expected)):
            crontick.enqueue(conn, args.pop("type"), args.pop("payload"), **args)
        crontick.enqueue(conn, "t_unstorable.ok", {"text": "a\\u0000b"})  # an escaped backslash is no NUL
    assert _jobs(conn) == 1


def test_enqueue_many_names_the_job_whose_payload_or_type_cannot_be_stored(conn: psycopg.Connection[Any]) -> None:
    jobs: list[tuple[str, Any]] = [("t_unstorable.ok", {"n": n}) for n in range(4)]
    with pytest.raises(CrontickError, match="^" + re.escape("enqueue_many: job 2 ('t_unstorable.ok'): " + NUL_JSON)):
        crontick.enqueue_many(conn, [*jobs[:2], ("t_unstorable.ok", {"n": "\x00"}), *jobs[2:]])
    with pytest.raises(CrontickError, match="^" + re.escape("enqueue_many: " + NUL_TEXT.format("a job type"))):
        crontick.enqueue_many(conn, [*jobs, ("t_unstorable.\x00", {})])
    assert _jobs(conn) == 0
    assert len(crontick.enqueue_many(conn, jobs)) == 4


def test_a_signal_refuses_a_key_or_payload_postgresql_cannot_store(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        with pytest.raises(CrontickError, match="^" + re.escape("crontick.signal: " + NUL_TEXT.format("an event key"))):
            crontick.signal(conn, "reply:\x00", {"ok": True})
        with pytest.raises(CrontickError, match="^" + re.escape("crontick.signal: " + NUL_JSON)):
            crontick.signal(conn, "reply:1", {"text": "\x00"})
        assert crontick.signal(conn, "reply:1", {"ok": True}) is None  # kept for the wait that begins on it
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (1,)


def test_job_types_are_bounded_in_python_and_in_sql(conn: psycopg.Connection[Any]) -> None:
    bound = f"expected a job type of at most {TYPE_MAX_BYTES} bytes (UTF-8), got"
    widest = "t_unstorable." + "é" * 93 + "x"  # 200 bytes in 107 characters: bytes are counted
    assert len(widest.encode()) == TYPE_MAX_BYTES
    assert crontick.enqueue(conn, widest, {}) > 0
    assert conn.execute("select crontick.enqueue(%(t)s)", {"t": widest}).fetchone()[0] > 0  # type: ignore[index]
    for call in (
        lambda: crontick.enqueue(conn, LONG_TYPE, {}),
        lambda: crontick.enqueue_many(conn, [("t_unstorable.ok", {}), (LONG_TYPE, {})]),
    ):
        with pytest.raises(CrontickError, match=re.escape(f"{bound} {len(LONG_TYPE)}") + "$"):
            call()
    with pytest.raises(CrontickError, match=re.escape(f"{bound} {TYPE_MAX_BYTES + 1}") + "$"):
        crontick.enqueue(conn, widest + "x", {})
    with pytest.raises(psycopg.errors.StringDataRightTruncation) as refused:  # SQLSTATE 22001, like a key's bound
        conn.execute("select crontick.enqueue(%(t)s)", {"t": LONG_TYPE})
    assert str(refused.value).startswith(f"crontick.enqueue: {bound} {len(LONG_TYPE)}")
    assert _jobs(conn) == 2  # the two at the bound


def test_handlers_schedules_and_hooks_refuse_a_type_or_payload_that_cannot_be_stored() -> None:
    with pytest.raises(ConfigError, match=re.escape("@crontick.handler: " + NUL_TEXT.format("a job type"))):
        crontick.handler("t_unstorable.\x00")(lambda payload, job: None)
    with pytest.raises(
        ConfigError, match=re.escape(f"@crontick.handler: expected a job type of at most {TYPE_MAX_BYTES}")
    ):
        crontick.handler(LONG_TYPE)(lambda payload, job: None)
    with pytest.raises(
        ConfigError, match=re.escape("crontick.schedule('t-unstorable'): expected a job type of at most")
    ):
        crontick.schedule("t-unstorable", "* * * * *", LONG_TYPE)
    with pytest.raises(ConfigError, match=re.escape("crontick.schedule('t-unstorable'): " + NUL_JSON)):
        crontick.schedule("t-unstorable", "* * * * *", "t_unstorable.ok", {"text": "\x00"})
    with pytest.raises(ConfigError, match=re.escape("crontick.schedule: " + NUL_TEXT.format("a name"))):
        crontick.schedule("t-unstorable\x00", "* * * * *", "t_unstorable.ok")
    with pytest.raises(
        ConfigError, match=re.escape("crontick.inbound('t-unstorable'): expected a job type of at most")
    ):
        crontick.inbound("t-unstorable", LONG_TYPE, verify="bearer", secret="s" * 40)


def test_rate_limit_names_that_cannot_be_stored_are_refused_where_they_are_declared() -> None:
    # Every tick's claim carries the declared limits and the names handlers give: one NUL would fail every claim.
    with pytest.raises(ConfigError, match=re.escape("crontick.rate_limit: " + NUL_TEXT.format("a limit name"))):
        crontick.rate_limit("llm\x00", 10, per_seconds=60)
    with pytest.raises(ConfigError, match=re.escape(NUL_TEXT.format("rate_limit as a limit's name"))):
        crontick.handler("t_unstorable.limited", rate_limit="llm\x00")(lambda payload, job: None)
