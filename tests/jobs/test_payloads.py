"""Typed payloads (issue 37): @crontick.handler(type, payload=Model) with a pydantic model checks each payload at
enqueue (a CrontickError in the caller's transaction, before any statement, naming the fields), keeps the model's own
JSON, and hands the handler an instance; a payload no enqueue checked fails its job at once when it runs."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel, ConfigDict, Field

import crontick
from crontick.errors import ConfigError, CrontickError, StepError
from crontick.jobs import payloads
from tests.support.core_jobs import job_row, settings_for, tick


class Signup(BaseModel):
    user_id: int
    email: str
    plan: str = "free"
    tags: list[str] = Field(default_factory=list)


seen: list[Any] = []


@crontick.handler("t_typed.signup", payload=Signup)
def on_signup(payload: Signup, job: crontick.Job) -> None:
    seen.append(payload)


@crontick.handler("t_typed.signup_async", payload=Signup)
async def on_signup_async(payload: Signup, job: crontick.Job) -> None:
    seen.append(payload)


@crontick.handler("t_typed.parent")
async def parent(payload: Any, job: crontick.Job) -> None:
    await job.spawn("kids", "t_typed.signup", payload["children"])


@pytest.fixture(autouse=True)
def _fresh() -> None:
    seen.clear()


def _count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select count(*) from crontick.jobs").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("type", ["t_typed.signup", "t_typed.signup_async"])
def test_the_handler_gets_an_instance_of_its_model_made_from_the_kept_json(
    conn: psycopg.Connection[Any], database_url: str, type: str
) -> None:
    job_id = crontick.enqueue(conn, type, {"user_id": "42", "email": "ada@example.com"})
    # The model's own JSON is kept: the string "42" coerced, the defaults filled in.
    assert job_row(conn, job_id)["payload"] == {"user_id": 42, "email": "ada@example.com", "plan": "free", "tags": []}
    crontick.enqueue(conn, type, Signup(user_id=7, email="bob@example.com", tags=["beta"]))  # an instance as well
    assert tick(database_url, settings_for(database_url)).jobs.succeeded == 2
    assert sorted(seen, key=lambda s: s.user_id) == [
        Signup(user_id=7, email="bob@example.com", tags=["beta"]),
        Signup(user_id=42, email="ada@example.com"),
    ]


def test_a_payload_that_does_not_fit_is_refused_at_enqueue_naming_each_field(conn: psycopg.Connection[Any]) -> None:
    before = _count(conn)
    with conn.transaction():
        crontick.enqueue(conn, "t_typed.plain", {})
        with pytest.raises(CrontickError) as refused:
            crontick.enqueue(conn, "t_typed.signup", {"user_id": "forty-two", "tags": "x"})
    message = str(refused.value)
    assert message.startswith("enqueue('t_typed.signup'): expected a payload matching Signup, got 3 errors: ")
    assert "user_id: Input should be a valid integer" in message and "email: Field required" in message
    assert "tags: Input should be a valid list" in message
    assert "forty-two" not in message  # no input value is repeated
    assert refused.value.__cause__ is None and refused.value.__suppress_context__  # no pydantic trace behind it
    assert _count(conn) == before + 1  # the caller's transaction went on: its other job is kept


def test_enqueue_many_and_async_enqueue_check_too(conn: psycopg.Connection[Any], database_url: str) -> None:
    ids = crontick.enqueue_many(
        conn, [("t_typed.signup", {"user_id": 1, "email": "a@x"}), ("t_typed.plain", {"any": "thing"})]
    )
    assert job_row(conn, ids[0])["payload"]["plan"] == "free" and job_row(conn, ids[1])["payload"] == {"any": "thing"}
    with pytest.raises(CrontickError, match=r"^enqueue_many: job 1 \('t_typed.signup'\): expected a payload matching"):
        crontick.enqueue_many(conn, [("t_typed.signup", {"user_id": 2, "email": "b@x"}), ("t_typed.signup", {})])

    async def enqueue_async() -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
            await crontick.enqueue(aconn, "t_typed.signup", {"user_id": 3})

    with pytest.raises(CrontickError, match="email: Field required"):
        asyncio.run(enqueue_async())
    assert _count(conn) == 2


def test_a_spawned_child_is_checked_against_its_types_model(conn: psycopg.Connection[Any], database_url: str) -> None:
    good = crontick.enqueue(conn, "t_typed.parent", {"children": [{"user_id": 5, "email": "c@x"}]})
    bad = crontick.enqueue(conn, "t_typed.parent", {"children": [{"user_id": 6}]})
    tick(database_url, settings_for(database_url))
    kids = conn.execute("select payload from crontick.jobs where parent_id = %s", (good,)).fetchall()
    assert kids == [({"user_id": 5, "email": "c@x", "plan": "free", "tags": []},)]
    failed = job_row(conn, bad)
    assert failed["status"] == "failed" and StepError.__name__ in failed["last_error"]
    assert "job.spawn('kids'): payload 0: expected a payload matching Signup" in failed["last_error"]


def test_a_payload_no_enqueue_checked_fails_its_job_at_once(conn: psycopg.Connection[Any], database_url: str) -> None:
    row = conn.execute("select crontick.enqueue('t_typed.signup', '{\"user_id\": \"x\"}')").fetchone()
    assert row is not None
    tick(database_url, settings_for(database_url))
    failed = job_row(conn, row[0])
    assert failed["status"] == "failed" and failed["attempts"] == 1 and seen == []
    assert f"job {row[0]} (t_typed.signup): expected a payload matching Signup, got 2 errors" in failed["last_error"]


def test_payload_must_be_a_pydantic_model_class() -> None:
    for wrong in (dict, Signup(user_id=1, email="x"), "Signup"):
        with pytest.raises(
            ConfigError, match=r"^@crontick.handler\('t_typed.wrong'\): expected payload= as a pydantic"
        ):
            crontick.handler("t_typed.wrong", payload=wrong)


class Opaque:
    """A field type pydantic validates (arbitrary_types_allowed) but has no JSON Schema for."""


class WithOpaque(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    thing: Opaque | None = None


def test_the_schema_of_a_model_pydantic_cannot_describe_is_a_note() -> None:
    assert payloads.schema(Signup)["required"] == ["user_id", "email"]
    assert payloads.schema(WithOpaque) == {
        "description": "pydantic gives no JSON Schema for WithOpaque (PydanticInvalidForJsonSchema)"
    }
