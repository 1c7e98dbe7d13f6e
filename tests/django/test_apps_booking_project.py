"""tests/django/booking_project's system checks (crontick.django.apps): a reminder source no migration creates is a
warning from `migrate` and `check`, not a failure."""

from __future__ import annotations

from tests.django.projects import Site


def test_a_source_no_migration_creates_is_a_warning_from_migrate_and_check_not_a_failure(site: Site) -> None:
    missing = {"CRONTICK_REMINDER_SOURCE": "public.no_such_view"}
    done = site.django("migrate", **missing)
    assert done.returncode == 0, done.stderr
    assert (
        "crontick: warning: CRONTICK_REMINDER_SOURCE public.no_such_view: expected a table or view crontick can read, "
        "got: no such table or view"
    ) in done.stderr
    check = site.django("check", **missing)
    assert check.returncode == 0, check.stderr
    assert "(crontick.W001) CRONTICK_REMINDER_SOURCE public.no_such_view: expected a table or view" in check.stderr
