"""crontick from a Django view: enqueue inside the view's transaction, kick on transaction.on_commit.

Run it:  DATABASE_URL=postgresql://... CRON_SECRET=... python examples/django_app.py runserver
(Django 5 with psycopg 3: `connection.connection` is the psycopg connection of Django's own transaction.)
"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings

if not settings.configured:
    from psycopg.conninfo import conninfo_to_dict

    db = conninfo_to_dict(os.environ["DATABASE_URL"])
    settings.configure(
        DEBUG=True,
        SECRET_KEY="example-only",  # noqa: S106 - a runnable example, never deployed
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["*"],
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": db.get("dbname"),
                "USER": db.get("user", ""),
                "PASSWORD": db.get("password", ""),
                "HOST": db.get("host", ""),
                "PORT": db.get("port", ""),
            }
        },
    )

from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.urls import path

import crontick

sent: list[str] = []  # what the handler did, for the example's test


@crontick.handler("send_welcome_email_django")
def send_welcome_email(payload: Any, job: crontick.Job) -> None:
    sent.append(payload["email"])


def signup(request: HttpRequest) -> JsonResponse:
    email = request.POST["email"]
    with transaction.atomic():
        # ... User.objects.create(email=email) ...
        connection.ensure_connection()
        job_id = crontick.enqueue(connection.connection, "send_welcome_email_django", {"email": email})
        # Runs only if the transaction commits, so the tick finds the job; returns at once (a thread ticks).
        transaction.on_commit(crontick.kick)
    return JsonResponse({"job_id": job_id})


urlpatterns = [path("signup", signup)]

if __name__ == "__main__":
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
