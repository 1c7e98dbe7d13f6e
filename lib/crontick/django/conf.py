"""crontick's settings in a Django project: the environment crontick reads, with DATABASE_URL from Django's DATABASES when unset."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import pq
from psycopg.conninfo import make_conninfo

from crontick.errors import ConfigError
from crontick.settings import Settings


def environ() -> dict[str, str]:
    """os.environ, plus DATABASE_URL for Django's default database when the environment has none.

    Read when asked, not at start-up: Django's test runner points the connection at its test
    database (`test_<NAME>`) after setup, and the derived URL follows it there.
    """
    env = dict(os.environ)
    if not env.get("DATABASE_URL", "").strip():
        env["DATABASE_URL"] = database_url()
    return env


def settings() -> Settings:
    """crontick's Settings for this project (ConfigError when a variable is wrong)."""
    return Settings.from_env(environ())


def database_url(alias: str = DEFAULT_DB_ALIAS) -> str:
    """A libpq conninfo string for Django's `alias` database, from the parameters Django connects with.

    NAME, USER, PASSWORD, HOST, PORT and every OPTIONS entry libpq knows (sslmode, sslrootcert,
    service, options, …); driver-only options (pool, server_side_binding, cursor_factory) are
    left out.
    """
    connection = connections[alias]
    if connection.vendor != "postgresql":
        engine = connection.settings_dict.get("ENGINE")
        raise ConfigError(
            f"DATABASES[{alias!r}]: expected a PostgreSQL database (ENGINE django.db.backends.postgresql, or a "
            f"backend built on it), got: {engine!r}; crontick's jobs live in the same database as your data"
        )
    try:
        params: Mapping[str, object] = connection.get_connection_params()
    except ImproperlyConfigured as exc:  # e.g. neither NAME nor OPTIONS["service"]
        raise ConfigError(f"DATABASES[{alias!r}]: {exc}") from None
    keywords = _libpq_keywords()
    return make_conninfo(**{k: str(v) for k, v in params.items() if k in keywords and v not in (None, "")})


@cache
def _libpq_keywords() -> frozenset[str]:
    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())
