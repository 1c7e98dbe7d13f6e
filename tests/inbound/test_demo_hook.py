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

from crontick import cli
from tests.conftest import TEST_SECRET, free_port, url_of


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
            [sys.executable, "-m", "crontick.cli", "dev", "--port", str(port)],
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
        _wait_for(out, lambda text: "You said: Hello from WhatsApp." in text or None)
    finally:
        proc.terminate()
        proc.wait(10)
    text = out.read_text()
    assert "To: +31612345678" in text and "Subject: WhatsApp auto-reply to SM" in text
    assert conn.execute("select type, status from jobs where type = 'autoreply'").fetchall() == [("autoreply", "done")]


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
    assert cli.main(["hook-sign", url, "-d", "Body=hi there", "-d", "From=whatsapp:+31612345678"]) == 0
    words = shlex.split(capsys.readouterr().out)
    signature = words[words.index("-H") + 1].removeprefix("X-Twilio-Signature: ")
    form = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--data-urlencode")
    assert form["Body"] == "hi there" and form["MessageSid"].startswith("SM") and words[-1] == url
    assert RequestValidator("tok-" + "x" * 28).validate(url, form, signature)
    assert cli.main(["hook-sign", url, "-d", "no-equals-sign"]) == 1
