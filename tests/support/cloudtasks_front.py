"""Cloud Tasks locally: gcloud-tasks-emulator (PyPI; gRPC) keeps the time and calls the target, and a small REST
front of ours adds what it lacks, as Google documents it: the metadata server's access token, CreateTask over REST
(`POST /v2/<queue>/tasks`), 409 ALREADY_EXISTS for a task name seen before (a deleted one too, as Cloud Tasks refuses
a recently deleted name), DeleteTask (`DELETE /v2/<queue>/tasks/<id>`: 404 NOT_FOUND for none), and the `oidcToken`: each task's call
carries an ID token for the service account, signed by a local OIDC issuer (tests/support/credentials.OidcIssuer)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt

from tests.support.credentials import OidcIssuer
from tests.support.servers import answer_json, free_port, stop

ACCESS_TOKEN = "ya29.local-access-token"
QUEUE = "projects/octo-project/locations/europe-west1/queues/crontick"
METADATA_TOKEN = "/computeMetadata/v1/instance/service-accounts/default/token"  # noqa: S105 (a path)


@dataclass
class Front:
    issuer: OidcIssuer
    emulator: Any = None  # a tasks_v2.CloudTasksClient on the emulator, or None: tasks are only recorded
    url: str = ""
    names: set[str] = field(default_factory=set)
    created: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # task names deleted with DeleteTask
    token_fetches: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        if headers.get("authorization") != f"Bearer {ACCESS_TOKEN}":
            return 401, _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        task = json.loads(body)["task"]
        if not path.startswith(f"/v2/{QUEUE}/tasks") or not task["name"].startswith(f"{QUEUE}/tasks/"):
            return 404, _error(404, "NOT_FOUND", "Queue does not exist.")
        with self.lock:
            if task["name"] in self.names:
                return 409, _error(409, "ALREADY_EXISTS", "Requested entity already exists")
            self.names.add(task["name"])
            self.created.append(task)
        if self.emulator is not None:
            self._forward(task)
        return 200, {**task, "dispatchCount": 0, "view": "BASIC"}

    def delete(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """DeleteTask: the task is gone (never dispatched), 200 with an empty body; 404 NOT_FOUND when there is none."""
        if headers.get("authorization") != f"Bearer {ACCESS_TOKEN}":
            return 401, _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        name = path.removeprefix("/v2/")
        with self.lock:
            if not name.startswith(f"{QUEUE}/tasks/") or name not in self.names or name in self.deleted:
                return 404, _error(404, "NOT_FOUND", "Requested entity was not found.")
            self.deleted.append(name)  # kept in `names`: the name stays refused
        if self.emulator is not None:
            self.emulator.delete_task(name=name)
        return 200, {}

    def _forward(self, task: dict[str, Any]) -> None:
        """To the emulator, with the OIDC token Cloud Tasks would add (the emulator has no OIDC)."""
        from google.cloud import tasks_v2
        from google.protobuf import timestamp_pb2

        request = task["httpRequest"]
        oidc = request["oidcToken"]
        now = int(time.time())
        claims = {"aud": oidc["audience"], "email": oidc["serviceAccountEmail"], "email_verified": True,
                  "iss": self.issuer.url, "sub": "117826213744850153911", "iat": now, "exp": now + 3600}  # fmt: skip
        token = jwt.encode(claims, self.issuer.key, algorithm="RS256", headers={"kid": self.issuer.kid})
        when = timestamp_pb2.Timestamp()
        when.FromDatetime(datetime.fromisoformat(task["scheduleTime"].replace("Z", "+00:00")))
        self.emulator.create_task(
            parent=QUEUE,
            task=tasks_v2.Task(
                name=task["name"],
                schedule_time=when,
                http_request=tasks_v2.HttpRequest(
                    url=request["url"],
                    http_method=tasks_v2.HttpMethod.POST,
                    headers={**request.get("headers", {}), "Authorization": f"Bearer {token}"},
                    body=base64.b64decode(request.get("body", "")),
                ),
            ),
        )


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


@contextmanager
def emulator() -> Iterator[Any]:
    """gcloud-tasks-emulator on a free port with the queue; yields a gRPC client on it."""
    import grpc

    with warnings.catch_warnings():  # google.api_core's notice about Python 3.11's end of life
        warnings.simplefilter("ignore", FutureWarning)
        from google.cloud import tasks_v2
        from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gcloud_tasks_emulator", "start", "-p", str(port), "-d", QUEUE, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        client = tasks_v2.CloudTasksClient(transport=CloudTasksGrpcTransport(channel=channel))
        deadline = time.monotonic() + 30
        while QUEUE not in [q.name for q in client.list_queues(parent=QUEUE.rsplit("/queues/", 1)[0])]:
            if time.monotonic() > deadline:
                raise RuntimeError("the emulator never created the queue")
            time.sleep(0.1)
        yield client
    finally:
        channel.close()
        stop(proc)


@contextmanager
def cloudtasks_front(issuer: OidcIssuer, tasks_emulator: Any = None) -> Iterator[Front]:
    """The REST front (and metadata server) on a free loopback port; `.url` is both base URLs."""
    front = Front(issuer, tasks_emulator)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == METADATA_TOKEN and self.headers.get("Metadata-Flavor") == "Google":
                front.token_fetches += 1
                answer_json(self, 200, {"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})
            else:
                answer_json(self, 404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            answer_json(self, *front.create(self.path, {k.lower(): v for k, v in self.headers.items()}, body))

        def do_DELETE(self) -> None:  # noqa: N802
            answer_json(self, *front.delete(self.path, {k.lower(): v for k, v in self.headers.items()}))

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    front.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield front
    finally:
        server.shutdown()
        server.server_close()
