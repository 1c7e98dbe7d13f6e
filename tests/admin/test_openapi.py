"""The admin API's OpenAPI document: generated from the routes (every route in it, nothing else), each
answer of the main routes valid against its schema, and schemathesis driving every documented route."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import schemathesis
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from crontick.admin import api_routes
from crontick.admin.openapi import Undocumented, document
from crontick.admin.routing import ApiRoute, Operation, Param
from crontick.app import create_app
from tests.admin.api_support import ADMIN, API_ADMIN_SECRET, api_settings, insert_jobs
from tests.support.core_jobs import db_now, tick
from tests.support.http_checks import LiveApp
from tests.support.servers import serve

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
OPENAPI = "/api/admin/openapi.json"


def _seed(conn: psycopg.Connection[Any]) -> None:
    """Failed jobs with their attempts, pending jobs, five ticks an hour apart and one failed reminder send."""
    insert_jobs(conn, 40)
    insert_jobs(conn, 20, status="pending", type="t_api.p")
    conn.execute(
        "insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)"
        " select id, 1, now(), now(), 'failed', last_error from jobs where status = 'failed' and type = 't_api.x'"
    )
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary)"
        " select now() - g * interval '15 minutes', now() - g * interval '15 minutes' + interval '1 second', 'test',"
        ' \'{"jobs": {"succeeded": 3, "failed": 1}}\' from generate_series(1, 5) g'
    )
    booking = conn.execute(
        "insert into bookings (customer_name, starts_at) values ('Ada', now() + interval '2 hours') returning id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, last_error)"
        " values (%(b)s, '24h', 'console', 'failed', 'boom')",
        {"b": booking},
    )


def _routed(routes: Iterable[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(path, method) of every route the app answers, through mounts; HEAD is implied by GET."""
    for route in routes:
        if isinstance(route, Mount):
            yield from _routed(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            methods = route.methods or set()
            for method in methods - ({"HEAD"} if "GET" in methods else set()):
                yield prefix + route.path_format, method


def test_every_admin_api_route_is_documented_with_its_path_and_methods(database_url: str) -> None:
    app = create_app(api_settings(database_url))
    routed = {(path, method) for path, method in _routed(app.routes) if path.startswith("/api/admin/")}
    with serve(app) as base:
        served = httpx.get(base + OPENAPI, headers=ADMIN)
    assert served.status_code == 200, served.text
    documented = {(path, method.upper()) for path, item in served.json()["paths"].items() for method in item}
    assert len(routed) >= 14  # the whole API was found, not an empty list
    assert routed == documented


async def _nothing(request: Request) -> Response:
    return Response()


def test_a_route_without_its_operation_or_with_another_path_parameter_fails_the_document() -> None:
    with pytest.raises(Undocumented, match="expected an ApiRoute"):
        document([*api_routes(), Route("/api/admin/new", _nothing, methods=["GET"])])
    misnamed = Operation("One job", ("Job", "The job."), path=(Param("job_id", "Id"),))
    with pytest.raises(Undocumented, match=r"path parameters \['id'\]"):
        document([ApiRoute("/api/admin/jobs/{id}/new", _nothing, "GET", misnamed)])
    with pytest.raises(Undocumented, match="schemas named"):
        document([ApiRoute("/api/admin/new", _nothing, "GET", Operation("New", ("Jobb", "A typo.")))])
    twice = ApiRoute("/api/admin/stats", _nothing, "GET", Operation("Again", ("Stats", "The numbers.")))
    with pytest.raises(Undocumented, match="two for GET /api/admin/stats"):
        document([*api_routes(), twice])


def test_each_main_route_answers_what_its_document_says(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # Real ticks write a job that retried then failed, one done (its last history entry is the job's
    # own row), and the ticks' rows and hourly figures that stats sums; then the rows the seed adds.
    failing, done = (
        conn.execute(
            "insert into jobs (type, payload, max_attempts) values (%(t)s, '{}', 2) returning id", {"t": t}
        ).fetchone()[0]  # type: ignore[index]
        for t in ("t_core.fail", "t_core.ok")
    )
    tick(database_url, now=db_now(conn))
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(id)s", {"id": failing})
    tick(database_url, now=db_now(conn))
    _seed(conn)
    with live_app(api_settings(database_url)) as base:
        schema = schemathesis.openapi.from_dict(httpx.get(base + OPENAPI, headers=ADMIN).json())

        def checked(path: str, url: str, method: str = "GET") -> Any:
            answer = httpx.request(method, base + url, headers=ADMIN)
            assert answer.status_code == 200, answer.text
            schema[path][method].validate_response(answer)  # raises, saying what differs
            return answer.json()

        assert {j["status"] for j in checked("/api/admin/jobs", "/api/admin/jobs?limit=500")["jobs"]} == {
            "failed",
            "pending",
            "done",
        }
        assert checked("/api/admin/jobs", "/api/admin/jobs?status=failed&limit=2")["next_cursor"] is not None
        history = checked("/api/admin/jobs/{id}", f"/api/admin/jobs/{failing}")["history"]
        assert [h["outcome"] for h in history] == ["retried", "failed"]
        detail = checked("/api/admin/jobs/{id}", f"/api/admin/jobs/{done}")
        assert [h["outcome"] for h in detail["history"]] == ["succeeded"]
        stats = checked("/api/admin/stats", "/api/admin/stats")
        assert stats["jobs"]["failed"] == 41 and stats["last_tick_at"] is not None and stats["hourly"]
        [send] = checked("/api/admin/reminders", "/api/admin/reminders")["reminders"]
        assert (send["status"], send["kind"]) == ("failed", "24h")
        assert checked("/api/admin/reminders/due", "/api/admin/reminders/due")["bookings"]
        assert len(checked("/api/admin/ticks", "/api/admin/ticks")["ticks"]) == 7
        retried = checked("/api/admin/jobs/{id}/retry", f"/api/admin/jobs/{failing}/retry", "POST")
        assert retried["status"] == "pending"

        # The check can fail: the same real answer without a field its schema requires is refused.
        answer = httpx.get(f"{base}/api/admin/jobs/{done}", headers=ADMIN)
        broken = {**answer.json(), "history": [{**h, "outcome": None} for h in answer.json()["history"]]}
        forged = httpx.Response(200, json=broken, request=answer.request)
        forged.elapsed = answer.elapsed
        assert not schema["/api/admin/jobs/{id}"]["GET"].is_valid_response(forged)


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    _seed(conn)
    with live_app(api_settings(database_url)) as base:
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                f"{base}{OPENAPI}",
                "-H",
                f"Authorization: Bearer {API_ADMIN_SECRET}",
                "--checks",
                CHECKS,
                "--max-examples",
                "25",
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                "7",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "passed" in run.stdout.lower()
