"""Cold start: import cost of the Vercel entry module, and a fresh process's first tick end to end."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .http_drain import ROOT, SECRET
from .noop import HANDLER_MODULE
from .seen import PATH_VARIABLE

# Loaded the way Vercel's Python runtime loads a function file (spec_from_file_location, then
# exec_module), not with runpy, whose own imports (pkgutil) would be counted against crontick.
ENTRY = (
    "import importlib.util as u; s = u.spec_from_file_location('tick', 'api/cron/tick.py');"
    " s.loader.exec_module(u.module_from_spec(s))"
)
# What the entry module cannot do without: the ASGI framework parts it serves with, the
# PostgreSQL driver (httpx is imported only when a tick sends something).
DEPENDENCIES = "import starlette.applications, starlette.requests, starlette.responses, starlette.routing, psycopg"
BARE = "pass"


def import_us(python: str, code: str, env: dict[str, str]) -> tuple[int, dict[str, int]]:
    """Total import time (µs) of `python -X importtime -c code`, and each top-level module's."""
    proc = subprocess.run(
        [python, "-X", "importtime", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    modules: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name.startswith("  "):  # top level: nested imports are indented further
            modules[name.strip()] = int(cumulative)
    return sum(modules.values()), modules


def imports(python: str, repeats: int) -> dict[str, Any]:
    """Median import times, every module loaded from cached bytecode, as from an installed wheel.

    pip compiles a wheel's modules at install, but an editable checkout (or a shell with
    PYTHONDONTWRITEBYTECODE, as here) would compile crontick's sources on every run while its
    dependencies load from bytecode. A private PYTHONPYCACHEPREFIX, warmed once, puts both on
    the same footing.
    """
    totals: dict[str, list[int]] = {"entry": [], "dependencies": [], "bare": []}
    last: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="crontick-bench-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for code in (ENTRY, DEPENDENCIES, BARE):
            import_us(python, code, env)  # warm the bytecode cache
        for _ in range(repeats):  # interleaved, so noise falls on all three alike
            for key, code in (("entry", ENTRY), ("dependencies", DEPENDENCIES), ("bare", BARE)):
                total, modules = import_us(python, code, env)
                totals[key].append(total)
                last[key] = modules
    bare = statistics.median(totals["bare"])
    entry = statistics.median(totals["entry"]) - bare
    deps = statistics.median(totals["dependencies"]) - bare
    return {
        "repeats": repeats,
        "entry_ms": round(entry / 1000, 1),
        "dependencies_ms": round(deps / 1000, 1),
        "interpreter_imports_ms": round(bare / 1000, 1),
        "ratio": round(entry / deps, 2),
        "entry_top_level_modules_ms": {
            k: round(v / 1000, 1) for k, v in sorted(last["entry"].items(), key=lambda kv: -kv[1])[:8]
        },
    }


def first_tick(python: str, url: str, seen_file: Path) -> dict[str, Any]:
    """Start a fresh process that loads the entry module, connects and serves one tick."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CRON_SECRET": SECRET,
        "CRONTICK_HANDLERS": HANDLER_MODULE,
        PATH_VARIABLE: str(seen_file),
    }
    began = time.perf_counter()
    proc = subprocess.run([python, "-m", "bench.first_tick"], cwd=ROOT, env=env, capture_output=True, text=True)
    wall_ms = (time.perf_counter() - began) * 1000
    if proc.returncode != 0:
        raise RuntimeError(
            f"expected the first-tick process to succeed, got exit {proc.returncode}: {proc.stderr[-2000:]}"
        )
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    if child["status"] != 200:
        raise RuntimeError(f"expected the first tick to answer 200, got {child['status']}: {child['body']}")
    return {"total_ms": wall_ms, **child}
