"""A debounced job in the admin (issue 37): its page and GET /api/admin/jobs/{id} show every merged payload, not
only the newest, and Retry on a reply to messages minutes old warns that the conversation may have moved on."""

from __future__ import annotations

import html
from typing import Any

import httpx
import psycopg
from pydantic import BaseModel, Field

import crontick
from tests.support.admin_pages import running, settings_for, signed_in

MESSAGES = ["hi", "are you open <tomorrow>?", "at 10"]


def debounced_reply(conn: psycopg.Connection[Any]) -> int:
    for text in MESSAGES:
        job_id = crontick.enqueue(
            conn, "t_admin.reply", {"text": text}, debounce=crontick.Debounce("reply:+316", 3, max_seconds=20)
        )
    return job_id


def test_a_debounced_job_shows_every_merged_payload_oldest_first(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = debounced_reply(conn)
    [plain] = [crontick.enqueue(conn, "t_admin.plain", {"text": "alone"})]
    settings = settings_for(database_url)
    with running(settings) as base:
        page = signed_in(base).get(f"/admin/jobs/{job_id}").text
        api = httpx.get(f"{base}/api/admin/jobs/{job_id}", headers={"Authorization": f"Bearer {settings.admin_secret}"})
        other = signed_in(base).get(f"/admin/jobs/{plain}").text
    assert "Payloads merged (3, oldest first)" in page
    shown = [html.unescape(page).index(f'"text": "{text}"') for text in MESSAGES]
    assert shown == sorted(shown)  # oldest first, each escaped as HTML
    assert "are you open &lt;tomorrow&gt;?" in page
    assert api.status_code == 200, api.text
    assert [p["text"] for p in api.json()["payloads"]] == MESSAGES and api.json()["payload"] == {"text": "at 10"}
    assert "Payloads merged" not in other and '"text": "alone"' in html.unescape(other)


def test_retry_of_a_reply_to_messages_minutes_old_warns(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = debounced_reply(conn)
    conn.execute("update jobs set status = 'failed', finished_at = now(), attempts = 1 where id = %s", (job_id,))
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        fresh = c.get(f"/admin/jobs/{job_id}").text
        conn.execute("update jobs set created_at = now() - interval '12 minutes' where id = %s", (job_id,))
        old = c.get(f"/admin/jobs/{job_id}").text
    assert "the conversation may have moved on" not in fresh
    assert "This job answers 3 messages, the first 12 minutes ago: the conversation may have moved on." in old


class Reply(BaseModel):
    """A WhatsApp reply to send."""

    to: str
    text: str = Field(max_length=1600)


@crontick.handler("t_admin.typed_reply", payload=Reply)
def typed_reply(payload: Reply, job: crontick.Job) -> None:
    return None


def test_a_typed_jobs_page_shows_its_payload_schema(database_url: str, conn: psycopg.Connection[Any]) -> None:
    typed = crontick.enqueue(conn, "t_admin.typed_reply", {"to": "+316", "text": "see you at <10>"})
    plain = crontick.enqueue(conn, "t_admin.plain", {"text": "alone"})
    with running(settings_for(database_url)) as base:
        page = signed_in(base).get(f"/admin/jobs/{typed}").text
        other = signed_in(base).get(f"/admin/jobs/{plain}").text
    assert "Payload schema: <code>Reply</code>" in page and "Payload schema" not in other
    shown = html.unescape(page)
    assert '"maxLength": 1600' in shown and '"required": [' in shown and '"title": "Reply"' in shown
    assert "see you at &lt;10&gt;" in page  # the payload still escaped


def test_the_api_and_its_openapi_give_a_typed_jobs_payload_schema(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    typed = crontick.enqueue(conn, "t_admin.typed_reply", {"to": "+316", "text": "hello"})
    plain = crontick.enqueue(conn, "t_admin.plain", {"text": "alone"})
    settings = settings_for(database_url)
    auth = {"Authorization": f"Bearer {settings.admin_secret}"}
    with running(settings) as base:
        got = httpx.get(f"{base}/api/admin/jobs/{typed}", headers=auth)
        other = httpx.get(f"{base}/api/admin/jobs/{plain}", headers=auth)
        described = httpx.get(f"{base}/api/admin/openapi.json", headers=auth)
    assert got.status_code == 200, got.text
    found = got.json()["payload_schema"]
    assert found["model"] == "Reply" and found["schema"] == Reply.model_json_schema()
    assert other.json()["payload_schema"] is None
    detail = described.json()["components"]["schemas"]["JobDetail"]["allOf"][1]["properties"]
    assert detail["payload_schema"]["type"] == ["object", "null"]
