"""Secrets that are not a Settings field's value: inbound hooks' (declared) and the DATABASE_URL password."""

from __future__ import annotations

import functools

# Secrets crontick holds outside Settings (each inbound hook's), counted in every Settings' secrets.
# A tuple, replaced whole: a tick reading it in one thread never sees it change size in another.
declared: tuple[str, ...] = ()


def declare_secret(value: str) -> None:
    """Count `value` among Settings.secrets from now on (crontick.hooks.inbound, for each hook's secret)."""
    global declared
    if value and value not in declared:
        declared = (*declared, value)


@functools.lru_cache(maxsize=8)
def database_passwords(url: str) -> tuple[str, ...]:
    """DATABASE_URL's password as written and as libpq reads it (p%40ss and p@ss), for Settings.secrets."""
    if not url:
        return ()
    from urllib.parse import quote, urlsplit

    import psycopg  # the app loads it anyway; importing settings alone does not
    from psycopg.conninfo import conninfo_to_dict

    found: list[str] = []
    try:
        password = str(conninfo_to_dict(url).get("password") or "")
        found += [password, quote(password, safe="")]
    except psycopg.ProgrammingError:
        pass  # a URL libpq cannot read (Settings built in code): the text form below still counts
    if "://" in url:
        try:
            found.append(urlsplit(url).password or "")
        except ValueError:  # a bracketed host urlsplit refuses
            pass
    return tuple(dict.fromkeys(p for p in found if p))
