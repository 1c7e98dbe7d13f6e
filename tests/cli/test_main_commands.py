"""The installed `crontick` console script, run as a subprocess against a real database."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from crontick import db, enqueue_many
from tests.support.core_jobs import job_row
from tests.support.databases import fresh_database
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key
from tests.support.run_cli import cli_env, crontick, crontick_many, spawn
from tests.support.servers import free_port
from tests.support.sidefx_handlers import SIDE_EFFECTS_TABLE_SQL


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    return cli_env(database_url)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """A failed command: non-zero exit, one `crontick: error: …` line on stderr, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crontick: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def enqueue(env: dict[str, str], *args: str) -> int:
    result = crontick("enqueue", *args, env=env)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip())


@pytest.mark.slow
def test_migrate_applies_then_reports_up_to_date(admin_url: str) -> None:
    versions = [v for v, _ in db.migration_files()]
    with fresh_database(admin_url, "template0") as empty:
        first = crontick("migrate", env=cli_env(empty))
        second = crontick("migrate", env=cli_env(empty))
    assert (first.returncode, first.stdout.strip()) == (0, f"applied: {', '.join(versions)}")
    assert (second.returncode, second.stdout.strip()) == (0, "up to date")


def test_enqueue_with_payload_run_after_max_attempts(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    job_id = enqueue(
        env,
        "send_welcome_email",
        "--payload",
        '{"user_id": 42}',
        "--run-after",
        "2030-12-01T09:00:00+01:00",
        "--max-attempts",
        "2",
    )
    row = job_row(conn, job_id)
    assert (row["type"], row["payload"], row["max_attempts"], row["status"]) == (
        "send_welcome_email",
        {"user_id": 42},
        2,
        "pending",
    )
    assert row["run_after"] == datetime(2030, 12, 1, 8, 0, tzinfo=UTC)


def test_enqueue_key_de_duplicates(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    first = enqueue(env, "report", "--key", "report:2030-01-01")
    assert enqueue(env, "report", "--key", "report:2030-01-01", "--payload", '{"again": true}') == first
    assert conn.execute("select count(*) from jobs").fetchone() == (1,)


def test_enqueue_group_key_and_priority(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    job_id = enqueue(env, "reply", "--group-key", "conv:42", "--priority", "-10")
    row = job_row(conn, job_id)
    assert (row["group_key"], row["priority"]) == ("conv:42", -10)
    result = crontick("enqueue", "reply", "--group-key", "", env=env)
    assert_one_line_error(result, "expected group_key as a non-empty string or None, got: ''")


def test_enqueue_refuses_a_key_over_the_bound_in_one_line_and_takes_one_at_it(
    env: dict[str, str], conn: psycopg.Connection[Any]
) -> None:
    at_bound, too_long = widest_key(WIDEST_CHARS), key_of_bytes(8000, seed=1)  # 2,048 and 8,000 bytes
    ascii_key = "https://example.com/report?" + "q" * 1973  # 2,000 characters, 2,000 bytes: within the bound
    key, group, fits, ascii_fits = crontick_many(
        [
            ["enqueue", "report", "--key", too_long],
            ["enqueue", "report", "--group-key", too_long],
            ["enqueue", "report", "--key", at_bound, "--group-key", at_bound],
            ["enqueue", "report", "--key", ascii_key, "--group-key", ascii_key],
        ],
        env,
    )
    assert_one_line_error(key, "enqueue('report'): expected key of at most 2,048 bytes (UTF-8), got 8000")
    assert_one_line_error(group, "enqueue('report'): expected group_key of at most 2,048 bytes (UTF-8), got 8000")
    for fit, expected in ((fits, at_bound), (ascii_fits, ascii_key)):
        assert fit.returncode == 0, fit.stderr
        row = job_row(conn, int(fit.stdout))
        assert (row["key"], row["group_key"]) == (expected, expected)
    assert conn.execute("select count(*) from jobs").fetchone() == (2,)


def test_enqueue_bad_json_is_one_line(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    result = crontick("enqueue", "report", "--payload", "{user_id: 42}", env=env)
    assert_one_line_error(result, "--payload: expected JSON", "{user_id: 42}")
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)


def test_enqueue_time_without_offset_is_refused(env: dict[str, str]) -> None:
    result = crontick("enqueue", "report", "--run-after", "2030-12-01T09:00:00", env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "expected a time with a UTC offset" in result.stderr


def test_jobs_lists_by_status(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    pending, failed = enqueue_many(conn, [("alpha", {}), ("beta", {})])
    conn.execute("update jobs set status = 'failed', last_error = 'ValueError: nope' where id = %(id)s", {"id": failed})
    only_failed = crontick("jobs", "--status", "failed", env=env)
    everything = crontick("jobs", env=env)
    assert only_failed.returncode == everything.returncode == 0
    rows = only_failed.stdout.splitlines()[1:]
    assert len(rows) == 1 and rows[0].split()[:3] == [str(failed), "beta", "failed"]
    assert "ValueError: nope" in rows[0]
    assert {line.split()[0] for line in everything.stdout.splitlines()[1:]} == {str(pending), str(failed)}


def test_retry_makes_a_failed_job_pending_again_keeping_its_attempts(
    env: dict[str, str], conn: psycopg.Connection[Any]
) -> None:
    [job_id] = enqueue_many(conn, [("beta", {})], max_attempts=1)
    conn.execute("update jobs set status = 'failed', attempts = 1 where id = %(id)s", {"id": job_id})
    result = crontick("retry", str(job_id), env=env)
    assert (result.returncode, result.stdout.strip()) == (0, f"job {job_id} is pending again (attempts 1 of 2)")
    row = job_row(conn, job_id)
    # The count is kept (history stays true) and one more attempt is granted.
    assert (row["status"], row["attempts"], row["max_attempts"]) == ("pending", 1, 2)
    again = crontick("retry", str(job_id), env=env)
    assert_one_line_error(again, f"expected a failed, done or cancelled job, got job {job_id} with status 'pending'")
    audit = conn.execute("select role, action, rows from admin_audit").fetchall()
    assert audit == [("cli", "retry_job", 1)]


@pytest.mark.slow
def test_cancel_stats_and_json(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    pending, done = enqueue_many(conn, [("alpha", {"n": 1}), ("beta", {"n": 2})])
    conn.execute("update jobs set status = 'done' where id = %(id)s", {"id": done})
    cancelled = crontick("cancel", str(pending), "--json", env=env)
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
    refused = crontick("cancel", str(done), "--json", env=env)
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"] == "conflict"
    stats = json.loads(crontick("stats", "--json", env=env).stdout)
    assert stats["jobs"] == {"pending": 0, "running": 0, "done": 1, "failed": 0, "cancelled": 1, "waiting": 0}
    assert stats["stale"] is True and stats["last_tick_at"] is None
    table = crontick("stats", env=env).stdout
    assert "cancelled" in table and "last tick: never (stale)" in table
    listed = json.loads(crontick("jobs", "--json", "--payload", '{"n": 2}', env=env).stdout)
    assert [j["id"] for j in listed["jobs"]] == [done] and listed["next_cursor"] is None
    page = json.loads(crontick("jobs", "--json", "--limit", "1", env=env).stdout)
    rest = json.loads(crontick("jobs", "--json", "--cursor", page["next_cursor"], env=env).stdout)
    assert [j["id"] for j in page["jobs"] + rest["jobs"]] == [done, pending]


def test_retry_unknown_id_is_a_clear_error(env: dict[str, str]) -> None:
    assert_one_line_error(
        crontick("retry", "999999", env=env), "expected an existing job id, got: 999999 (no such job)"
    )


def test_tick_prints_the_summary_and_names_handler_modules(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    env = cli_env(
        database_url, CRONTICK_HANDLERS="tests.support.sidefx_handlers", CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS="0"
    )
    ok, unknown = enqueue_many(conn, [("t_sidefx.record", {}), ("t_cli.nobody_handles_this", {})])
    result = crontick("tick", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {"jobs", "reminders", "more", "duration_ms"} <= summary.keys()
    assert (summary["jobs"]["claimed"], summary["jobs"]["succeeded"], summary["jobs"]["failed"]) == (2, 1, 1)
    assert job_row(conn, ok)["status"] == "done"
    error = job_row(conn, unknown)["last_error"]
    assert "'t_cli.nobody_handles_this'" in error and "tests.support.sidefx_handlers" in error


def test_tick_drain_runs_batch_after_batch(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute(SIDE_EFFECTS_TABLE_SQL)
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.support.sidefx_handlers", CRONTICK_BATCH_SIZE="3")
    enqueue_many(conn, [("t_sidefx.record", {}) for _ in range(10)])
    result = crontick("tick", "--drain", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["jobs"]["claimed"], summary["jobs"]["succeeded"], summary["more"]) == (10, 10, False)
    assert conn.execute("select count(*) from side_effects").fetchone() == (10,)
    assert conn.execute("select count(*) from jobs where status <> 'done'").fetchone() == (0,)


BAD_URLS = {
    "not-a-url": "DATABASE_URL: expected a PostgreSQL URL",
    "mysql://root@127.0.0.1/app": "DATABASE_URL: expected a PostgreSQL URL",
    # libpq only finds this one when it connects, so it reads as "unavailable", but still says what is wrong.
    "postgresql://postgres@127.0.0.1:notaport/db": 'invalid integer value "notaport" for connection option "port"',
}


def test_bad_database_url_is_one_clear_line() -> None:
    for url, message in BAD_URLS.items():
        env = cli_env(None, DATABASE_URL=url)
        # migrate takes the async connection path, enqueue the sync one.
        for result in crontick_many([["migrate"], ["enqueue", "report"]], env):
            assert_one_line_error(result, message)


def test_missing_database_url_is_one_clear_line() -> None:
    assert_one_line_error(
        crontick("migrate", env=cli_env(None)), "DATABASE_URL: expected a PostgreSQL URL", "got: nothing"
    )


def test_unreachable_database_is_one_clear_line() -> None:
    env = cli_env(None, DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/crontick")
    for result in crontick_many([["migrate"], ["tick", "--drain"], ["retry", "1"]], env):
        assert_one_line_error(result, "database unavailable")


def test_serve_with_a_short_secret_is_one_clear_line(env: dict[str, str]) -> None:
    result = crontick("serve", "--port", "0", env={**env, "CRON_SECRET": "hunter2"}, timeout=30)
    line = assert_one_line_error(result, "CRON_SECRET: expected at least 32 characters, got: 7")
    assert "hunter2" not in line


def test_tick_before_migrate_says_to_migrate(admin_url: str) -> None:
    with fresh_database(admin_url, "template0") as empty:
        result = crontick("tick", env=cli_env(empty))
    assert_one_line_error(result, "run `crontick migrate`")


def test_handler_module_that_fails_on_import_is_one_clear_line(database_url: str, tmp_path: Any) -> None:
    (tmp_path / "broken_jobs.py").write_text("import os\nAPI_KEY = os.environ['NOT_SET_ANYWHERE']\n")
    env = cli_env(database_url, CRONTICK_HANDLERS="broken_jobs")
    env["PYTHONPATH"] += f":{tmp_path}"
    assert_one_line_error(crontick("tick", env=env), "CRONTICK_HANDLERS", "'broken_jobs'", "KeyError")


def test_malformed_database_url_never_prints_the_password() -> None:
    env = cli_env(None, DATABASE_URL="postgresql://app:hunter2 pass@127.0.0.1/app")
    for result in crontick_many([["migrate"], ["jobs"]], env):
        line = assert_one_line_error(result, "DATABASE_URL: expected a PostgreSQL URL")
        assert "hunter2" not in line


def test_a_listing_piped_into_head_stops_quietly(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    """`crontick jobs | head -1`: the reader leaves after one line; no BrokenPipe traceback on stderr."""
    # 500 rows of JSON with a 1 KB payload each: far more than a pipe buffer (64 KiB) holds, so the
    # command is still writing when the reader leaves.
    enqueue_many(conn, [("pipe", {"n": n, "pad": "x" * 1000}) for n in range(500)])
    proc = spawn("jobs", "--json", "--limit", "500", env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)  # the first byte: the command is running and writing
    proc.stdout.close()  # what `head -1` does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def test_version_is_the_installed_package_version() -> None:
    from importlib.metadata import version

    result = crontick("--version", env=cli_env(None))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"crontick {version('crontick')}"
    import crontick as package

    assert package.__version__ == version("crontick")
