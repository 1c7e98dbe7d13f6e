"""A handlers module with a schedule whose expression is wrong: loading it must fail in one line."""

from __future__ import annotations

import crontick

crontick.schedule("broken-digest", "0 9 * * Mon-Fry", "t_cli.digest", time_zone="Europe/Amsterdam")
