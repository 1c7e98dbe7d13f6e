"""crontick inside an existing FastAPI app: mounted at /ops, and a route that enqueues a job and kicks.

Run it:  DATABASE_URL=... CRON_SECRET=... CRONTICK_ADMIN_SECRET=... uvicorn examples.fastapi_app:app
Then the scheduler calls /ops/api/cron/tick, and the admin is at /ops/admin. The app's own 404 and
405 answer everywhere outside /ops.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from fastapi import BackgroundTasks, FastAPI

import crontick
from crontick.app import app as crontick_app

app = FastAPI()
sent: list[str] = []  # what the handler did, for the example's test


@crontick.handler("send_welcome_email")
def send_welcome_email(payload: Any, job: crontick.Job) -> None:
    sent.append(payload["email"])  # a real app calls its email provider here


@app.post("/signup")
def signup(email: str, background: BackgroundTasks) -> dict[str, Any]:
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn, conn.transaction():
        # ... insert the user here: the job commits with it, or neither does ...
        job_id = crontick.enqueue(conn, "send_welcome_email", {"email": email}, key=f"welcome:{email}")
    # After the response (and after the commit above): start a tick now, not at the next scheduled one.
    background.add_task(crontick.kick_async)
    return {"job_id": job_id}


# /ops/api/cron/tick, /ops/api/health, /ops/api/hooks/{name} and the admin at /ops/admin.
# With the http kick (or QStash, or Twilio), set CRONTICK_PUBLIC_URL to https://<your app>/ops.
app.mount("/ops", crontick_app)
