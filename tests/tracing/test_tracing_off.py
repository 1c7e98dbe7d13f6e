"""crontick.tracing when the app does not trace: without OpenTelemetry imported, a tick and an enqueue import none
of it; with it imported but no tracer provider set, nothing is traced (each in a real process, checked)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.constants import PYTHONPATH, ROOT


def _tick_in_a_process(database_url: str, first_import: str, then_print: str) -> str:
    """In a fresh process: `first_import`, enqueue a one-step job and tick it; what `then_print` prints."""
    script = (
        f"import asyncio, sys, psycopg, crontick{first_import}\n"
        "import crontick.app\n"
        "from crontick import tracing\n"
        "from crontick.runtime import Runtime\n"
        "from crontick.settings import Settings\n"
        "@crontick.handler('t_trace.plain')\n"
        "def plain(payload, job):\n"
        "    job.step('one', lambda: 1)\n"
        "with psycopg.connect(sys.argv[1], autocommit=True) as conn:\n"
        "    crontick.enqueue(conn, 't_trace.plain', {})\n"
        "async def go():\n"
        "    rt = Runtime(Settings(database_url=sys.argv[1], cron_secret='s' * 40))\n"
        "    result = await rt.run(source='test')\n"
        "    await rt.close()\n"
        "    return result\n"
        "assert asyncio.run(go()).jobs.succeeded == 1\n"
        f"print({then_print})\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PYTHONPATH}
    done = subprocess.run(
        [sys.executable, "-c", script, database_url], env=env, capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_opentelemetry_imported_a_tick_and_an_enqueue_import_none_of_it(database_url: str) -> None:
    printed = _tick_in_a_process(database_url, "", "sorted(m for m in sys.modules if m.startswith('opentelemetry'))")
    assert printed == "[]"


def test_opentelemetry_imported_without_a_tracer_provider_traces_nothing_and_reads_no_traceparents(
    database_url: str,
) -> None:
    # A library may import opentelemetry.trace while the app sets no provider: nothing would record,
    # so crontick starts no span and sends no statement for its spans (a tick's statement count holds).
    assert _tick_in_a_process(database_url, ", opentelemetry.trace", "tracing.tracer()") == "None"
