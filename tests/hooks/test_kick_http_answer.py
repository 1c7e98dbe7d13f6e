"""The http kick reads the tick's answer through the capped reader: a bomb in it is a logged kick failure."""

from __future__ import annotations

import asyncio
import gzip
import json

from pytest_httpserver import HTTPServer
from werkzeug import Response

from crontick.hooks.kick import _coalesced, _tick_http
from crontick.settings import Settings
from tests.support import bombs
from tests.support.constants import TEST_SECRET
from tests.support.logs import LogLines


def _settings(server: HTTPServer) -> Settings:
    return Settings(cron_secret=TEST_SECRET, public_url=server.url_for("").rstrip("/"), kick="http", batch_size=10)


def test_a_bomb_as_the_ticks_answer_is_refused_and_logged(
    httpserver: HTTPServer,
    crontick_log: LogLines,  # noqa: F811
) -> None:
    httpserver.expect_request("/api/cron/tick", method="POST").respond_with_response(bombs.stacked_bomb(200))
    settings = _settings(httpserver)
    asyncio.run(_coalesced(lambda: _tick_http(settings), "http"))  # never raises: a kick must not fail its caller
    [failed] = [json.loads(line) for line in crontick_log.lines if '"event": "kick_failed"' in line]
    assert failed["error"].startswith("UnreadableBody: expected an answer with no Content-Encoding or one layer")
    assert "got: 'gzip, gzip'; its body was not read" in failed["error"]


def test_an_ordinary_answer_is_read_asking_for_identity(httpserver: HTTPServer) -> None:
    full = {"jobs": {"claimed": 10}}
    httpserver.expect_request("/api/cron/tick", method="POST").respond_with_json(full)
    assert asyncio.run(_tick_http(_settings(httpserver))) is True  # a full batch: the kick takes the next at once
    [(request, _)] = httpserver.log
    assert request.headers["Accept-Encoding"] == "identity"
    assert request.headers["Authorization"].startswith("Bearer ")


def test_a_gzipped_answer_decodes(httpserver: HTTPServer) -> None:
    body = gzip.compress(json.dumps({"jobs": {"claimed": 3}}).encode())
    httpserver.expect_request("/api/cron/tick").respond_with_response(
        Response(body, 200, headers={"Content-Encoding": "gzip"}, content_type="application/json")
    )
    assert asyncio.run(_tick_http(_settings(httpserver))) is False
