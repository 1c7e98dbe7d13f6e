"""tests/django/booking_project, a small multi-app booking site run as its users run it: `python -m django` in
subprocesses against a fresh PostgreSQL database each, its reminders from a view another app's migration creates.

The view's app is `aviews` (migrated before crontick, as Django orders unrelated apps by label) or
`zviews` (after it): a fresh `migrate` must work both ways (issue 38, finding 1).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.django.projects import Site


@pytest.mark.parametrize("view_app", ["aviews", "zviews"])
def test_a_fresh_migrate_works_whichever_app_creates_the_view_and_the_first_tick_reads_it(
    site: Site, view_app: str
) -> None:
    done = site.django("migrate", REMINDER_VIEW_APP=view_app)
    assert done.returncode == 0, done.stderr
    check = site.django("check", REMINDER_VIEW_APP=view_app)
    assert check.returncode == 0 and "crontick.W001" not in check.stderr + check.stdout, check
    site.book("Ada Lovelace", datetime.now(UTC) + timedelta(hours=2))
    ticked = site.django("crontick_tick", REMINDER_VIEW_APP=view_app)
    assert ticked.returncode == 0, ticked.stderr
    summary = json.loads(ticked.stdout.strip().splitlines()[-1])
    assert summary["reminders"]["sent"] == 1, ticked.stdout
