"""`make run`'s WhatsApp hook end to end: the printed curl, run with curl, gets the auto-reply printed; hook-sign."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from twilio.request_validator import RequestValidator

from crontick.cli import main
from tests.support.constants import TEST_SECRET
from tests.support.databases import url_of
from tests.support.servers import free_port


def test_crontick_dev_prints_a_signed_curl_whose_reply_prints_within_seconds(
    database_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    port = free_port()
    out = tmp_path / "out.txt"
    env = {**os.environ, "DATABASE_URL": url_of(database_url), "CRON_SECRET": TEST_SECRET, "PYTHONUNBUFFERED": "1"}
    for name in ("TWILIO_AUTH_TOKEN", "CRONTICK_KICK", "CRONTICK_HANDLERS", "CRONTICK_PUBLIC_URL"):
        env.pop(name, None)
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "crontick.cli.main", "dev", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=sink,
            stderr=subprocess.DEVNULL,
        )
    try:
        line = _wait_for(
            out, lambda text: next((s.strip() for s in text.splitlines() if "X-Twilio-Signature" in s), None)
        )
        assert line.startswith("curl ") and f"http://127.0.0.1:{port}/api/hooks/whatsapp" in line
        _wait_for(out, lambda text: _up(port))  # the line is printed just before uvicorn listens
        answer = subprocess.run(
            [*shlex.split(line), "-w", " %{http_code}"], capture_output=True, text=True, timeout=10, check=False
        )
        assert answer.stdout == "<Response></Response> 200"
        # The documented fault: the fake Twilio refuses the first send; the job retries 5 s later, on the next tick.
        _wait_for(out, lambda text: "answered 503 to the first send" in text or None, timeout=40)
        tick_line = next(s.strip() for s in out.read_text().splitlines() if "Authorization: Bearer" in s)
        time.sleep(5.5)
        # The printed line names $CRON_SECRET (it came from the environment): a shell expands it, as in the tour.
        subprocess.run(["/bin/sh", "-c", tick_line], env=env, capture_output=True, timeout=20, check=True)
        _wait_for(out, lambda text: "You said: Hello from WhatsApp." in text or None, timeout=40)
    finally:
        proc.terminate()
        proc.wait(10)
    text = out.read_text()
    assert "To: +31612345678" in text and "Subject: WhatsApp auto-reply to SM" in text
    assert conn.execute("select type, status from jobs where type = 'autoreply'").fetchall() == [("autoreply", "done")]
    steps = conn.execute("select s.name from job_steps s join jobs j on j.id = s.job_id where j.type = 'autoreply'")
    assert sorted(r[0] for r in steps) == ["context", "llm", "send"]  # a workflow of durable steps (docs/steps.md)
    assert text.count("calling the LLM (attempt") == 1  # the retry after the failed send reused the recorded reply


def _up(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200
    except httpx.HTTPError:
        return False


def _wait_for(path: Path, found: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found(path.read_text())
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out; output so far:\n{path.read_text()}")


def test_hook_sign_prints_a_curl_line_twilio_would_accept(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "tok-" + "x" * 28)
    url = "https://app.example.com/api/hooks/whatsapp"
    assert main.main(["hook-sign", url, "-d", "Body=hi there", "-d", "From=whatsapp:+31612345678"]) == 0
    words = shlex.split(capsys.readouterr().out)
    signature = words[words.index("-H") + 1].removeprefix("X-Twilio-Signature: ")
    form = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--data-urlencode")
    assert form["Body"] == "hi there" and form["MessageSid"].startswith("SM") and words[-1] == url
    assert RequestValidator("tok-" + "x" * 28).validate(url, form, signature)
    assert main.main(["hook-sign", url, "-d", "no-equals-sign"]) == 1


def test_the_demo_replies_once_to_a_burst_of_messages_and_its_failed_first_send_calls_no_llm_again(
    database_url: str, conn: psycopg.Connection[Any], capfd: Any, monkeypatch: Any
) -> None:
    from datetime import timedelta

    import crontick
    from crontick import demo
    from tests.support.core_jobs import db_now, tick

    sender = {"From": "whatsapp:+31612345678", "To": demo.DEMO_WHATSAPP_FROM}
    debounce = demo.DEMO_REPLY_DEBOUNCE.for_event(sender)
    assert debounce is not None and debounce.key == sender["From"]
    for n, body in enumerate(("hi", "can I book", "at 3?")):
        payload = {"hook": "whatsapp", "event_id": f"SMdemo{n}", "event": {**sender, "Body": body}}
        crontick.enqueue(conn, "autoreply", payload, debounce=debounce, group_key="conv:" + sender["From"])
    assert conn.execute("select count(*), min(priority) from jobs").fetchone() == (1, -10)  # the handler's priority
    monkeypatch.setattr(demo.FAKE_TWILIO, "fail_next", True)
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=20)).jobs.retried == 1  # the fake Twilio's 503
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=30)).jobs.succeeded == 1
    out = capfd.readouterr().out
    assert out.count("calling the LLM (attempt") == 1 and "answered 503 to the first send" in out
    assert "You said: hi / can I book / at 3?." in out and "(3 messages in one reply)" in out
    # Both starts (the failed first attempt and its retry) counted against the fake LLM's rate limit.
    starts = conn.execute("select sum(n) from crontick_rate_limits, unnest(starts_n) n where name = 'demo-llm'")
    assert starts.fetchone() == (2,)
