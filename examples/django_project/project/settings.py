"""A minimal Django project with crontick installed: one app (signups), PostgreSQL from POSTGRES_* variables.

crontick reads its own environment (CRON_SECRET, CRONTICK_HANDLERS, …); with DATABASE_URL unset
it uses this DATABASES["default"], so the jobs live in the same database as the signups.
"""

import os

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-never-deployed")  # noqa: S105 - a runnable example
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "crontick.django",  # manage.py crontick_migrate / crontick_tick, and a system check of crontick's settings
    "signups",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]
ROOT_URLCONF = "project.urls"

DATABASES = {
    "default": {
        # Django uses psycopg 3 whenever it is installed (crontick installs it); DJANGO_DB_DRIVER=psycopg2
        # picks the backend in project/psycopg2_backend, which keeps Django on psycopg2.
        "ENGINE": (
            "project.psycopg2_backend"
            if os.environ.get("DJANGO_DB_DRIVER") == "psycopg2"
            else "django.db.backends.postgresql"
        ),
        "NAME": os.environ.get("POSTGRES_DB", "example"),
        "USER": os.environ.get("POSTGRES_USER", "postgres"),
        "PASSWORD": os.environ.get("POSTGRES_PASSWORD", ""),
        "HOST": os.environ.get("POSTGRES_HOST", "127.0.0.1"),
        "PORT": os.environ.get("POSTGRES_PORT", "5432"),
    }
}

USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
