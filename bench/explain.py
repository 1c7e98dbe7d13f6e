"""EXPLAIN (ANALYZE, BUFFERS) of the statements inside crontick's SQL functions (sql/functions/*.sql).

EXPLAIN of `select ... from crontick_job_claim_due(...)` shows one Function Scan; the plan that
matters is the one the function keeps for its own statement. auto_explain, loaded into this session
only (superuser, as the bench's database role is), logs each nested statement's plan, and with
client_min_messages at log the server sends those lines to this connection as notices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

SESSION = (
    "load 'auto_explain'",
    "set auto_explain.log_min_duration = 0",
    "set auto_explain.log_nested_statements = on",
    "set auto_explain.log_analyze = on",
    "set auto_explain.log_buffers = on",
    "set client_min_messages = log",
)
RESET = ("reset client_min_messages", "reset auto_explain.log_min_duration")


async def nested_plans(conn: psycopg.AsyncConnection[Any], statement: str, params: Mapping[str, Any]) -> list[str]:
    """Run `statement` in a rolled-back transaction; the plan of every statement it ran, its own last."""
    plans: list[str] = []

    def keep(notice: psycopg.errors.Diagnostic) -> None:
        if notice.message_primary and "plan:" in notice.message_primary:
            plans.append(notice.message_primary)

    conn.add_notice_handler(keep)
    try:
        for setting in SESSION:
            await conn.execute(setting)
        async with conn.transaction(force_rollback=True):
            await (await conn.execute(statement, params)).fetchall()
    finally:
        for setting in RESET:
            await conn.execute(setting)
        conn.remove_notice_handler(keep)
    return plans
