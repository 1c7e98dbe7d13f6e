"""An install from before 0.2 (its tables in `public`) moved into its own schema by the statements the Upgrading page shows.

The SQL is read from docs/upgrading.md and run as it stands, so the page stays true: after it and a
new `crontick migrate`, the jobs, their history and the triggers are in `crontick`, exactly as a
fresh install there would have them, and nothing of crontick's is left in `public`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import psycopg
import pytest

from crontick import db
from tests.db.released import VERSIONS, catalog, migrate_as_released
from tests.support.constants import ROOT
from tests.support.databases import fresh_database

OLD_VERSIONS = [v for v in VERSIONS if v[:4] <= "0010"]  # what 0.1 shipped


def _move_statements() -> str:
    page = (ROOT / "docs" / "upgrading.md").read_text(encoding="utf-8")
    section = page[page.index("## Moving an install out of `public`") :]
    (block,) = re.findall(r"```sql\n(.*?)```", section, re.S)[:1]
    return "\n".join(line.strip() for line in block.splitlines())


@pytest.fixture
def old_install(admin_url: str) -> Iterator[str]:
    with fresh_database(admin_url, "template0") as url:
        migrate_as_released(url, len(OLD_VERSIONS))
        with psycopg.connect(url, autocommit=True) as conn:
            job_id = conn.execute(
                "insert into public.jobs (type, payload, status, attempts) values ('old', '{}', 'failed', 4) returning id"
            ).fetchone()[0]  # type: ignore[index]
            conn.execute(
                "insert into public.job_attempts (job_id, attempt, finished_at, outcome, error)"
                " values (%(id)s, 1, now(), 'retried', 'boom')",
                {"id": job_id},
            )
            conn.execute("insert into public.jobs (type, payload) values ('waiting', '{\"n\": 1}')")
        yield url


def test_the_upgrading_page_moves_an_old_install_into_its_own_schema(old_install: str, admin_url: str) -> None:
    with psycopg.connect(old_install, autocommit=True) as conn:
        conn.execute(_move_statements().encode())
    assert asyncio.run(db.migrate(old_install)) == VERSIONS[len(OLD_VERSIONS) :]
    with fresh_database(admin_url, "template0") as url:
        asyncio.run(db.migrate(url))
        assert catalog(old_install, "crontick") == catalog(url, "crontick")
    with psycopg.connect(old_install, autocommit=True) as conn:
        left = conn.execute("select count(*) from pg_class where relnamespace = 'public'::regnamespace").fetchone()
        assert left == (0,)
        assert conn.execute("select type from crontick.jobs order by id").fetchall() == [("old",), ("waiting",)]
        assert conn.execute("select error from crontick.job_attempts").fetchall() == [("boom",)]
        # The moved trigger still takes a deleted job's history with it, and the queue runs on.
        conn.execute("delete from crontick.jobs where type = 'old'")
        assert conn.execute("select count(*) from crontick.job_attempts").fetchone() == (0,)
        new_id = conn.execute("select crontick.enqueue('after_move')").fetchone()
        assert new_id is not None and new_id[0] > 2
