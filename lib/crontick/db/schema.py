"""Where crontick lives: the one schema (CRONTICK_SCHEMA, default `crontick`) every statement names, composed with psycopg.sql.

SQL in sql/ writes crontick's own names as `{schema}.jobs`, and `{schema_name}` where the schema
is needed as a string literal. `compose` fills both with `psycopg.sql.Identifier` and
`psycopg.sql.Literal`, once per statement at load, never by pasting text. Qualified names need no
`search_path`, which a transaction pooler would not carry from one statement to the next.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from psycopg import sql

from crontick.errors import ConfigError
from crontick.settings import schema_name
from crontick.text import KEY_MAX_BYTES, TYPE_MAX_BYTES

SCHEMA_VARIABLE = "CRONTICK_SCHEMA"


def checked(name: str) -> str:
    """`name` if it is a schema crontick may own, else ConfigError saying what is expected."""
    if name != schema_name(name):  # an empty name is the default there, not a schema
        raise ConfigError(f"{SCHEMA_VARIABLE}: expected a schema name, got: {name!r}")
    return name


def from_env(env: Mapping[str, str] | None = None) -> str:
    """CRONTICK_SCHEMA, checked; the default when it is unset or empty."""
    return schema_name((os.environ if env is None else env).get(SCHEMA_VARIABLE, ""))


def api_names(schema: str) -> dict[str, sql.Composable]:
    """The SQL API's names: `crontick.enqueue`, `crontick.signal` and `crontick.cancel` in its own schema,
    `public.crontick_enqueue`, `public.crontick_signal` and `public.crontick_cancel` in the shared one."""
    prefix = "crontick_" if schema == "public" else ""
    return {
        "api_enqueue": sql.Identifier(f"{prefix}enqueue"),
        "api_signal": sql.Identifier(f"{prefix}signal"),
        "api_cancel": sql.Identifier(f"{prefix}cancel"),
    }


# The reminder source (CRONTICK_REMINDER_SOURCE): `{reminder_source}` in sql/ is its qualified name as an
# identifier, `{reminder_source_label}` the same as a string literal (for messages and the probe's check).
Source = tuple[str, str]
_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")


def default_source(schema: str) -> Source:
    """crontick's own bookings table in `schema`."""
    return (schema, "bookings")


def source_label(source: Source) -> str:
    """('public', 'appointments') -> 'public.appointments'; a part that needs quotes keeps them."""
    return ".".join(p if _PLAIN.fullmatch(p) else sql.Identifier(p).as_string(None) for p in source)


def _names(schema: str, source: Source | None) -> dict[str, sql.Composable]:
    src = source or default_source(schema)
    return {
        "schema": sql.Identifier(schema),
        "schema_name": sql.Literal(schema),
        "reminder_source": sql.Identifier(*src),
        "reminder_source_label": sql.Literal(source_label(src)),
        # The bounds the SQL API checks, defined once in crontick.text beside Python's own checks.
        "key_max_bytes": sql.Literal(KEY_MAX_BYTES),
        "type_max_bytes": sql.Literal(TYPE_MAX_BYTES),
        **api_names(schema),
    }


def compose(text: str, schema: str, source: Source | None = None) -> str:
    """`text` with `{schema}` as the quoted identifier, `{schema_name}` as a quoted literal, the SQL API's
    names (`{api_enqueue}`) and the reminder source (`{reminder_source}`, default `{schema}.bookings`)
    filled in (`{{` is a brace)."""
    return sql.SQL(text).format(**_names(schema, source)).as_string(None)


def compose_script(text: str, schema: str, source: Source | None = None) -> str:
    """`compose` for a migration or function file, whose comment lines may hold braces (`/api/hooks/{name}`)."""
    lines = text.split("\n")
    escaped = [line.replace("{", "{{").replace("}", "}}") if line.lstrip().startswith("--") else line for line in lines]
    return compose("\n".join(escaped), schema, source)


def compose_values(text: str, schema: str, **values: str) -> str:
    """`compose`, with each other `{name}` filled by `values[name]` as a quoted literal (a script, not a statement with parameters)."""
    literals = {name: sql.Literal(value) for name, value in values.items()}
    return sql.SQL(text).format(**_names(schema, None), **literals).as_string(None)
