"""Run by `manage.py shell` in tests/django: an async ORM handler ticked in this process, which then waits on stdin.

While it waits, the test looks for a connection of this process still open after the job; the
thread asgiref runs the async ORM's queries in outlives the tick.
"""

import sys
from typing import Any

from django.core.management import call_command
from django.db import connection
from signups.models import Signup

import crontick
import crontick.django


@crontick.django.handler("set_plan_async")
async def set_plan_async(payload: Any, job: crontick.Job) -> None:
    await Signup.objects.filter(pk=payload["signup_id"]).aupdate(plan=payload["plan"])


signup = Signup.objects.create(email="async@example.com", plan="free")
crontick.django.enqueue("set_plan_async", {"signup_id": signup.id, "plan": "pro"}, kick=False)
connection.close()  # this thread's own; only the handler's may be left open below
call_command("crontick_tick")
print("ticked", flush=True)
sys.stdin.readline()  # until the test closes stdin
