"""ministack (PyPI, pure Python) as a local AWS: EventBridge Scheduler fires `at()` schedules, and its Lambda runs
a Python function in a local subprocess (`python3` from PATH: this venv's, so crontick.aws is importable)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import free_port, stop

REGION = "us-east-1"
ACCOUNT = "000000000000"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/crontick-scheduler"


@contextmanager
def ministack() -> Iterator[str]:
    """A ministack process on a free loopback port; yields its endpoint URL."""
    port = free_port()
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "GATEWAY_PORT": str(port), "BIND_HOST": "127.0.0.1",
           "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}  # fmt: skip
    with tempfile.TemporaryDirectory() as home:
        log = open(Path(home) / "ministack.log", "w")  # noqa: SIM115 (closed below)
        proc = subprocess.Popen([str(Path(venv_bin) / "ministack")], env=env, cwd=home, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc)
            yield url
        finally:
            stop(proc)
            log.close()


def _wait_ready(url: str, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("ministack exited")
        try:
            httpx.get(url + "/_ministack/health", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("ministack did not start")


def client(url: str, service: str) -> Any:
    import botocore.session

    return botocore.session.get_session().create_client(
        service, endpoint_url=url, region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test"
    )


def crontick_lambda(url: str, name: str, env: dict[str, str]) -> str:
    """A Lambda function whose handler is crontick.aws.handler, configured by `env`; returns its ARN."""
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("index.py", "from crontick.aws import handler  # noqa: F401\n")
    created = client(url, "lambda").create_function(
        FunctionName=name, Runtime="python3.11", Role=ROLE_ARN, Handler="index.handler",
        Code={"ZipFile": code.getvalue()}, Timeout=60, Environment={"Variables": env},
    )  # fmt: skip
    return str(created["FunctionArn"])
