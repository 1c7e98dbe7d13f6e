"""CRONTICK_REMINDER_SOURCE: the reminder source's name, `schema.name`, parsed into its two parts.

Each part is a plain identifier (folded to lower case, as psql does) or a double-quoted one
(`"Sales"."Appointments"`, `""` for a quote inside). The parts are names, later composed with
psycopg.sql.Identifier (crontick.db.schema): never pasted into SQL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from crontick.errors import ConfigError

if TYPE_CHECKING:
    from crontick.settings.variables import Variable

_SOURCE_PART = re.compile(r'"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)')
SOURCE_EXAMPLE = "public.appointments_for_crontick"


def source_parts(value: str) -> tuple[str, str]:
    """'public.appointments' -> ('public', 'appointments'), else ConfigError saying what is expected."""
    parts: list[str] = []
    rest = value.strip()
    while True:
        match = _SOURCE_PART.match(rest)
        if match is None:
            break
        quoted, plain = match.groups()
        parts.append(quoted.replace('""', '"') if quoted is not None else plain.lower())
        rest = rest[match.end() :]
        if not rest.startswith("."):
            break
        rest = rest[1:]
    if rest or len(parts) != 2 or any(len(p.encode()) > 63 for p in parts):
        raise ConfigError(
            "CRONTICK_REMINDER_SOURCE: expected a schema-qualified table or view such as "
            f'{SOURCE_EXAMPLE} (or "Schema"."Table" for mixed case), got: {value!r}'
        )
    return parts[0], parts[1]


def reminder_source(row: Variable, value: str) -> str:
    """The `check` of CRONTICK_REMINDER_SOURCE's row: the name as given, once it parses."""
    source_parts(value)
    return value.strip()
