"""What the channels' wire tests share: one reminder sent by a real tick through a recording provider."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

from tests.support.reminders import NOW, Provider, Received, add_bookings, settings_for, tick

TEXT = "Hi Zoë, a reminder: your appointment is tomorrow, Tue 1 Dec at 09:30 (Amsterdam time)."


def send_one(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider, channel: str
) -> tuple[int, Received]:
    [booking] = add_bookings(
        conn,
        [
            (
                "Zoë Ångström",
                "zoe@example.com",
                "+31612345678",
                NOW + timedelta(hours=20, minutes=30),
                "Europe/Amsterdam",
                "confirmed",  # 09:30 in Amsterdam on Tue 1 Dec
            )
        ],
    )
    assert tick(database_url, settings_for(database_url, provider, channel), NOW).reminders.sent == 1
    [received] = provider.requests
    return booking, received
