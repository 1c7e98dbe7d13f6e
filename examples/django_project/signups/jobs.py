"""The project's crontick handlers (CRONTICK_HANDLERS=signups.jobs); the tick imports this module after django.setup()."""

from typing import Any

from django.utils import timezone

import crontick
import crontick.django

from .models import Signup


@crontick.django.handler("send_welcome_email")  # @crontick.handler, with Django's connections cared for
def send_welcome_email(payload: Any, job: crontick.Job) -> None:
    signup = Signup.objects.get(pk=payload["signup_id"])
    # ... send the email to signup.email with your provider ...
    Signup.objects.filter(pk=signup.pk, welcomed_at__isnull=True).update(welcomed_at=timezone.now())
