"""examples/django_project's ASGI app (crontick.django.asgi) under uvicorn: the tick, hooks and admin under /ops through the
router, a commit that kicks, nothing redirected to a refused host, signed requests verified with either public URL."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.django.projects import HANDLER_UPDATE, Project, wait_until
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.servers import free_port


def test_the_tick_hooks_and_admin_answer_under_ops_through_the_asgi_router_and_a_commit_kicks(
    project: Project,
) -> None:
    project.migrate()
    assert project.manage("crontick_migrate").stdout.strip() == "up to date"  # migrate installed it
    # A job enqueued by other means (here plain SQL), for the scheduler's tick over HTTP to run.
    signup_id = project.one(
        "insert into signups_signup (email, plan, created_at) values ('grace@example.com', 'pro', now()) returning id"
    )
    project.one(
        "select crontick.enqueue('send_welcome_email', jsonb_build_object('signup_id', %(id)s::bigint))",
        {"id": signup_id},
    )
    bearer = {"Authorization": f"Bearer {TEST_SECRET}"}
    with project.serve() as base, httpx.Client(base_url=base, timeout=30) as client:
        tick = client.post("/ops/api/cron/tick", headers=bearer)
        assert tick.status_code == 200, tick.text
        assert tick.json()["jobs"]["succeeded"] == 1
        assert project.one("select welcomed_at is not null from signups_signup where id = %(id)s", {"id": signup_id})
        # The handler's ORM connection was closed after the job, as Django closes a request's (CONN_MAX_AGE 0):
        # the tick's worker thread lives on in the server and would hold it open otherwise.
        wait_until(
            lambda: project.one(
                "select count(*) = 0 from pg_stat_activity where datname = current_database() and query like %(q)s",
                {"q": HANDLER_UPDATE},
            ),
            timeout=5,
        )

        unauthorised = client.post("/ops/api/cron/tick")
        health = client.get("/ops/api/health")
        hook = client.post("/ops/api/hooks/undeclared", content=b"{}")
        login = client.get("/ops/admin/login")
        unknown_under_ops = client.get("/ops/nothing-here")
        # Outside the prefix it is Django's project: its own 404, and nothing of crontick's at the old paths.
        django_404 = client.get("/nothing-here")
        no_root_tick = client.post("/api/cron/tick", headers=bearer)
        get_signup = client.get("/signup")

        # A signup in the view's transaction.atomic: once it commits, on_commit kicks and the job runs
        # without any tick being called.
        made = client.post("/signup", data={"email": "kick@example.com"})
        assert made.status_code == 200, made.text
        kicked = made.json()["signup_id"]
        wait_until(
            lambda: project.one("select welcomed_at is not null from signups_signup where id = %(id)s", {"id": kicked})
        )
    assert unauthorised.status_code == 401 and unauthorised.json()["error"] == "unauthorized"
    assert health.status_code == 200 and health.json()["ok"] is True and health.json()["last_tick_at"]
    assert hook.status_code == 404 and hook.json()["error"] == "unknown_hook"
    assert login.status_code == 200 and 'name="secret"' in login.text
    assert unknown_under_ops.status_code == 404 and unknown_under_ops.json()["error"] == "not_found"
    assert django_404.status_code == 404 and "text/html" in django_404.headers["content-type"]
    assert no_root_tick.status_code == 404 and "text/html" in no_root_tick.headers["content-type"]
    assert get_signup.status_code == 405  # Django's require_POST, not crontick's JSON 405
    assert project.one("select array_agg(status order by id) from crontick.jobs") == ["done", "done"]
    assert project.one("select sum(attempts) from crontick.jobs") == 2


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
def test_under_ops_nothing_redirects_to_the_host_header_that_allowed_hosts_refuses(project: Project) -> None:
    """`/ops` and `/ops/` both answer as crontick's root, with a path for a Location; a slash too many is a 404.
    Starlette's redirect would have sent the browser to whatever Host the request named, past ALLOWED_HOSTS."""
    forged = {"Host": "evil.example"}
    with project.serve() as base, httpx.Client(base_url=base, timeout=30) as client:
        bare = client.get("/ops", headers=forged)
        slashed = client.get("/ops/", headers=forged)
        extra = client.get("/ops/api/health/", headers=forged)
        djangos = client.post("/signup", headers=forged)
    assert (bare.status_code, bare.headers["location"]) == (302, "/ops/admin")
    assert (slashed.status_code, slashed.headers["location"]) == (302, "/ops/admin")
    assert (extra.status_code, extra.headers.get("location")) == (404, None)
    assert djangos.status_code == 400  # Django's own pages: ALLOWED_HOSTS refuses the host


@pytest.mark.parametrize("project", ["psycopg"], indirect=True)
@pytest.mark.parametrize("form", ["origin", "with prefix"])
def test_signed_twilio_and_qstash_requests_verify_with_either_form_of_the_public_url(
    project: Project, form: str
) -> None:
    """docs/django.md once said CRONTICK_PUBLIC_URL is the origin, docs/deploy/servers.md that it carries the
    prefix: either way, the URL a signature names is the one the sender called, /ops included."""
    from tests.support.credentials import QSTASH_CURRENT, qstash_signature, tick_token
    from tests.support.hooks import twilio_form, twilio_post

    project.migrate()
    port = free_port()
    called = f"http://127.0.0.1:{port}/ops"  # what Twilio and QStash call, and sign
    public = f"http://127.0.0.1:{port}" if form == "origin" else called
    key = QSTASH_CURRENT
    env = {
        "PYTHONPATH": os.pathsep.join((project.env["PYTHONPATH"], str(ROOT))),  # the tests' Twilio hook
        "CRONTICK_HANDLERS": "signups.jobs,tests.support.hooks",
        "CRONTICK_PUBLIC_URL": public,
        "CRONTICK_KICK": "off",
        "QSTASH_CURRENT_SIGNING_KEY": key,
    }
    with project.serve(port=port, **env), httpx.Client(timeout=30) as client:
        hooked = twilio_post(client, called, twilio_form("SMdjango1"), public_url=called)
        ticked = client.post(
            called + "/api/cron/tick",
            headers={"Upstash-Signature": qstash_signature(key, called + "/api/cron/tick", b"")},
        )
        # `crontick token` names CRONTICK_PUBLIC_URL as written, which stays a valid audience.
        token = {"Authorization": f"Bearer {tick_token(TEST_SECRET, public)}"}
        by_token = client.post(called + "/api/cron/tick", headers=token)
        # Signed for the URL without the prefix, which no sender calls: refused in both forms.
        elsewhere = twilio_post(client, called, twilio_form("SMdjango2"), public_url=f"http://127.0.0.1:{port}")
    answers = [r.status_code for r in (hooked, ticked, by_token, elsewhere)]
    assert answers == [200, 200, 200, 401], [r.text for r in (hooked, ticked, by_token, elsewhere)]
    assert project.one("select count(*) from crontick.jobs where type = 't_inbound.record'") == 1
