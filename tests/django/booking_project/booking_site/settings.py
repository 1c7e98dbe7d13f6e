"""A small multi-app booking project (tests/django/test_*_booking_project.py): salon's three tables, a view
over them in another app as crontick's reminder source, and i18n_patterns in the URLconf.

REMINDER_VIEW_APP picks the label of the app that creates the view: `aviews` migrates before
`crontick` when nothing orders them (Django runs unrelated apps in label order), `zviews` after.
"""

import os

SECRET_KEY = "booking-project-tests-only"  # noqa: S105 - a test project, never deployed
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "crontick.django",
    "salon",
    f"salon_reminders.apps.{os.environ.get('REMINDER_VIEW_APP', 'zviews').capitalize()}",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
]
ROOT_URLCONF = os.environ.get("BOOKING_URLCONF", "booking_site.urls")

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["POSTGRES_DB"],
        "USER": os.environ.get("POSTGRES_USER", "postgres"),
        "PASSWORD": os.environ.get("POSTGRES_PASSWORD", ""),
        "HOST": os.environ.get("POSTGRES_HOST", "127.0.0.1"),
        "PORT": os.environ.get("POSTGRES_PORT", "5432"),
    }
}

USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "French")]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = "127.0.0.1"
EMAIL_PORT = int(os.environ.get("SMTP_PORT", "25"))
DEFAULT_FROM_EMAIL = "salon@example.com"
