"""Django's PostgreSQL backend on psycopg2, although psycopg 3 (which crontick needs) is installed.

Django 4.2+ binds psycopg 3 whenever it can import it. This module imports Django's backend
while `import psycopg` fails, so Django binds psycopg2, then gives psycopg back to crontick.
It must be the first thing to import Django's backend (before django.contrib.postgres, say).
"""

import sys

from django.core.exceptions import ImproperlyConfigured

_psycopg = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "psycopg"}
sys.modules["psycopg"] = None  # type: ignore[assignment]  # `import psycopg` raises ImportError meanwhile
try:
    from django.db.backends.postgresql import base
finally:
    del sys.modules["psycopg"]
    sys.modules.update(_psycopg)

if base.is_psycopg3:
    raise ImproperlyConfigured(
        "project.psycopg2_backend: expected to load Django's PostgreSQL backend first, got one already bound to "
        "psycopg 3 (something imported django.db.backends.postgresql before this module)"
    )


class DatabaseWrapper(base.DatabaseWrapper):
    pass
