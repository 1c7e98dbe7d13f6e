"""PostgreSQL: connections (connection), named queries (queries), migrations (migrate), the cut-off of a request (cutoff)."""

from __future__ import annotations

from crontick.db.connection import CONNECT_TIMEOUT_SECONDS, MAX_CONNECTIONS, Database, connect, shut_down
from crontick.db.migrate import MIGRATION_LOCK_KEY, function_files, migrate, migration_files, required_functions
from crontick.db.queries import (
    QUERIES,
    current_schema,
    load_queries,
    parse_queries,
    query,
    sql_dir,
    use_schema,
    without_comment_lines,
)

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "MIGRATION_LOCK_KEY",
    "QUERIES",
    "Database",
    "connect",
    "current_schema",
    "function_files",
    "load_queries",
    "migrate",
    "migration_files",
    "parse_queries",
    "query",
    "required_functions",
    "shut_down",
    "sql_dir",
    "use_schema",
    "without_comment_lines",
]
