"""AWS Lambda: the admin pages through crontick.aws.handler, as a Function URL event reaches them."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest

from crontick import aws
from tests.support.admin_pages import ADMIN_SECRET, SECURITY_HEADERS, add_jobs
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.databases import url_of

HOST = "abcdefg123456789.lambda-url.us-east-1.on.aws"
BASE_EVENT = json.loads((ROOT / "tests" / "deploy" / "events" / "function_url.json").read_text())


@pytest.fixture
def runtime(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[aws.LambdaRuntime]:
    for name in (
        "QSTASH_CURRENT_SIGNING_KEY",
        "CRONTICK_GITHUB_OIDC_REPOSITORY",
        "CRONTICK_PUBLIC_URL",
        "CRONTICK_HANDLERS",
        "CRONTICK_ADMIN_VIEWER_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", url_of(database_url))
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    monkeypatch.setenv("CRONTICK_ADMIN_SECRET", ADMIN_SECRET)
    instance = aws.LambdaRuntime()
    yield instance
    instance.close()


def _event(method: str, path: str, *, body: str = "", headers: dict[str, str] | None = None) -> dict[str, Any]:
    event = copy.deepcopy(BASE_EVENT)
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["headers"] = {
        "host": HOST,
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        "content-length": str(len(body)),
        **(headers or {}),
    }
    event["body"] = body
    return event


def test_sign_in_and_read_a_page_through_the_lambda_handler(
    runtime: aws.LambdaRuntime, conn: psycopg.Connection[Any]
) -> None:
    [job_id] = add_jobs(conn, 1, error="SMTP 550")
    login = runtime.handle(_event("GET", "/admin/login"), None)
    assert login["statusCode"] == 200 and 'name="secret"' in login["body"]
    for name, value in SECURITY_HEADERS.items():
        assert login["headers"][name] == value
    form = urlencode({"secret": ADMIN_SECRET})
    signed = runtime.handle(
        _event(
            "POST",
            "/admin/login",
            body=form,
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "origin": f"https://{HOST}",
                "sec-fetch-site": "same-origin",
            },
        ),
        None,
    )
    assert signed["statusCode"] == 303, signed
    cookies = signed.get("cookies") or [signed["headers"]["set-cookie"]]
    cookie = cookies[0]
    assert cookie.startswith("__Host-crontick_admin=") and "Secure" in cookie and "HttpOnly" in cookie
    page = runtime.handle(_event("GET", "/admin", headers={"cookie": cookie.split(";", 1)[0]}), None)
    assert page["statusCode"] == 200 and f"#{job_id}" in page["body"] and "SMTP 550" in page["body"]
    assert runtime.handle(_event("GET", "/admin"), None)["statusCode"] == 303
