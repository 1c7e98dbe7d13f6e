"""The app that creates crontick's reminder source, under a label that sorts before crontick or after it."""

from django.apps import AppConfig


class Aviews(AppConfig):  # type: ignore[misc]
    name = "salon_reminders"
    label = "aviews"


class Zviews(AppConfig):  # type: ignore[misc]
    name = "salon_reminders"
    label = "zviews"
