"""POST /signup: the signup and its welcome job commit together, in one transaction.atomic, or neither does."""

from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

import crontick.django

from .models import Signup

PLANS = ("free", "pro")


class UnknownPlan(Exception):
    pass


@csrf_exempt  # a JSON API called by the example's test; a form would send Django's CSRF token
@require_POST
def signup(request: HttpRequest) -> JsonResponse:
    email, plan = request.POST.get("email", ""), request.POST.get("plan", "free")
    try:
        with transaction.atomic():
            row = Signup.objects.create(email=email, plan=plan)
            # In this transaction: a rollback below takes the job with it. After the commit, a tick starts.
            job_id = crontick.django.enqueue("send_welcome_email", {"signup_id": row.id})
            if plan not in PLANS:  # checked last, as a payment would be: failing now undoes the row and the job
                raise UnknownPlan(plan)
    except UnknownPlan:
        return JsonResponse({"error": "unknown_plan", "detail": f"expected one of {PLANS}, got: {plan!r}"}, status=400)
    except IntegrityError:
        return JsonResponse({"error": "taken", "detail": f"{email} has signed up already"}, status=409)
    return JsonResponse({"signup_id": row.id, "job_id": job_id})
