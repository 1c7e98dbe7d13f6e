"""Chaos scenarios 5 and 6, what crontick depends on fails: its role's connections run out; providers are slow,
fail, reset or never finish (scenario 5 through PgBouncer: bench/chaos/pool.py)."""

from __future__ import annotations

import os
import time

import httpx
import psycopg

from .drain import seed, tick
from .rig import Rig
from .scenario import Row, Sizes

# --- 5. connections run out ---------------------------------------------------------------------


def _connect_when_free(url: str) -> psycopg.Connection[tuple[object, ...]]:
    deadline = time.monotonic() + 10
    while True:
        try:
            return psycopg.connect(url, autocommit=True)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # the terminated backend is still counted for a moment


def connections(rig: Rig, sizes: Sizes) -> Row:
    """The app's role may hold one connection (superusers ignore connection limits, so a role of its own)."""
    from psycopg import sql as pgsql
    from psycopg.conninfo import make_conninfo

    from bench import server as pg

    rig.reset()
    role = f"chaos_app_{os.getpid()}"
    ident = pgsql.Identifier(role)
    with psycopg.connect(rig.url, autocommit=True) as admin:
        admin.execute(pgsql.SQL("drop role if exists {}").format(ident))
        admin.execute(pgsql.SQL("create role {} login connection limit 1").format(ident))
        # The runtime role's privileges docs/security.md lists: usage on crontick's schema, DML on its
        # tables and sequences, execute on its functions. Not the tables' owner, so row-level security
        # applies: it gets crontick's policy-free tables through bypassrls, as the docs say.
        admin.execute(pgsql.SQL("alter role {} bypassrls").format(ident))
        admin.execute(pgsql.SQL("grant usage on schema crontick to {}").format(ident))
        admin.execute(pgsql.SQL("grant all on all tables in schema crontick to {}").format(ident))
        admin.execute(pgsql.SQL("grant all on all sequences in schema crontick to {}").format(ident))
        admin.execute(pgsql.SQL("grant execute on all functions in schema crontick to {}").format(ident))
    app_url = make_conninfo(rig.url, user=role)
    env = {"DATABASE_URL": pg.as_url(app_url), "CRONTICK_TIME_BUDGET_SECONDS": "2"}
    try:
        with rig.serve(env) as server, httpx.Client(timeout=30) as client:
            # The server keeps a warm connection from its start-up health check: end it, then take the
            # role's only slot, so the next tick must connect and cannot.
            rig.sql("select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", (role,))
            holder = _connect_when_free(app_url)
            try:
                began = time.monotonic()
                refused = [tick(client, server.base) for _ in range(5)]
                took = (time.monotonic() - began) / len(refused)
                health = client.get(server.base + "/api/health")
            finally:
                holder.close()
            back = tick(client, server.base)
    finally:
        with psycopg.connect(rig.url, autocommit=True) as admin:
            admin.execute(pgsql.SQL("drop owned by {}").format(ident))
            admin.execute(pgsql.SQL("drop role if exists {}").format(ident))
    clear = all(
        r.status_code == 503 and r.json().get("error") == "database_unavailable" and r.headers.get("retry-after")
        for r in refused
    )
    ok = clear and health.status_code == 503 and back.status_code == 200 and took < 3.5
    return Row(
        "5 connections run out",
        "the app's role at its connection limit, 5 ticks, then released",
        f"{sum(r.status_code == 503 for r in refused)}/5 got 503 database_unavailable with Retry-After in "
        f"{took * 1000:.0f} ms each; health {health.status_code}; after release: {back.status_code}",
        ok=ok,
    )


# --- 6. slow and failing providers --------------------------------------------------------------


def providers(rig: Rig, sizes: Sizes) -> Row:
    budget = 2.0
    env = {"CRONTICK_TIME_BUDGET_SECONDS": str(budget), "CRONTICK_DELIVERY_TIMEOUT_SECONDS": "1"}
    worst = 0.0
    results = []
    for mode, delay in (("slow", budget + 2), ("error", 0.0), ("reset", 0.0), ("endless", 0.0)):
        rig.reset()
        seed(rig, 0, 5)
        rig.provider.mode, rig.provider.delay_seconds = mode, delay
        with rig.serve(env) as server, httpx.Client(timeout=60) as client:
            began = time.monotonic()
            r = tick(client, server.base)
            took = time.monotonic() - began
        worst = max(worst, took)
        states = dict(rig.sql("select status, count(*) from reminder_sends group by status"))
        results.append((mode, r.status_code, states))
    rig.provider.clear()
    # 500 and reset-before-send are definite failures: retried later. Slow and endless answers are
    # ambiguous for SMS (no idempotency key): 'unknown', never resent. Either way nothing is sent twice.
    ok = worst < budget + 1.5 and all(status == 200 for _, status, _ in results)
    ok = ok and all(sum(s.values()) == 5 for _, _, s in results) and max(rig.provider.sends.values(), default=0) <= 1
    summary = "; ".join(f"{m}: {dict(s)}" for m, _, s in results)
    return Row(
        "6 slow and failing providers",
        "delay past the budget, 500s, resets, an endless answer; 5 reminders each",
        f"worst tick {worst:.1f} s (budget {budget:.0f} s); {summary}",
        ok=ok,
    )
