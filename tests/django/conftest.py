"""Fixtures for the Django tests: each project on a fresh database of its own (tests/django/projects.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.django.projects import ADMIN_SECRET, BOOKING, EXAMPLE, SOURCE, Project, Site, project_database


@pytest.fixture(params=["psycopg", "psycopg2"])
def project(request: pytest.FixtureRequest, admin_url: str) -> Iterator[Project]:
    with project_database(
        admin_url,
        EXAMPLE,
        "project.settings",
        DJANGO_DB_DRIVER=request.param,
        CRONTICK_ADMIN_SECRET=ADMIN_SECRET,
        CRONTICK_HANDLERS="signups.jobs",
    ) as (url, env):
        yield Project(url, env)


@pytest.fixture
def site(admin_url: str) -> Iterator[Site]:
    with project_database(
        admin_url,
        BOOKING,
        "booking_site.settings",
        CRONTICK_REMINDER_SOURCE=SOURCE,
        CRONTICK_REMINDER_CHANNEL="console",
    ) as (url, env):
        yield Site(url, env)
