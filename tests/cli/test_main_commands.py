"""The installed `crontick` console script, run as a subprocess against a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import psycopg

from crontick import enqueue_many
from tests.support.core_jobs import job_row
from tests.support.databases import fresh_database
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key
from tests.support.run_cli import assert_one_line_error, cli_env, crontick, crontick_many
from tests.support.servers import free_port
from tests.support.sidefx_handlers import SIDE_EFFECTS_TABLE_SQL


def enqueue(env: dict[str, str], *args: str) -> int:
    result = crontick("enqueue", *args, env=env)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip())


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
    # The tick's own lines go to stderr as JSON, one an event, as an app's do (crontick.logs.setup).
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert events == ["tick"], result.stderr


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


def test_version_is_the_installed_package_version() -> None:
    from importlib.metadata import version

    result = crontick("--version", env=cli_env(None))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"crontick {version('crontick')}"
    import crontick as package

    assert package.__version__ == version("crontick")
