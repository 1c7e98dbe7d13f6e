"""One name per thing: a crontick module is imported under its own name (`from crontick.db import source`), so a
reader meets `source.explain`, not `reminder_source.explain` here and `src.explain` there (issue 34, item 5).

EXCEPTIONS lists the imports that keep another name, each with its reason: mostly where the module's own name is
already a name the file must keep (a route function `tick`, a public `kick()`, a parameter `schema` or `client`
that callers pass by keyword), or a second module of the same name (`crontick.channels.registry` beside
`crontick.jobs.registry`). A new alias fails here; one that is gone must leave the list.
"""

from __future__ import annotations

import ast

from tests.support.constants import ROOT

LIB = ROOT / "lib"
MODULES = {".".join(p.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__") for p in LIB.rglob("*.py")}
SAME_NAME_AS_A_ROUTE = "the app's route functions are named `tick` and `health`, and its body local `body`"
KEYWORD = "its own name is a keyword parameter callers pass (`schema=`, `client=`) throughout this module"
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("lib/crontick/app.py", "auth"): SAME_NAME_AS_A_ROUTE,
    ("lib/crontick/app.py", "http_body"): SAME_NAME_AS_A_ROUTE,
    ("lib/crontick/app.py", "health_check"): SAME_NAME_AS_A_ROUTE,
    ("lib/crontick/hooks/endpoint.py", "http_body"): "`body` is the verified request body the whole module passes on",
    ("lib/crontick/channels/wire.py", "http"): KEYWORD,
    ("lib/crontick/db/migrate.py", "schemas"): KEYWORD,
    ("lib/crontick/db/migrate.py", "reminder_source"): "`source` is the migrate's keyword parameter (the asked source)",
    ("lib/crontick/db/queries.py", "schemas"): KEYWORD,
    ("lib/crontick/django/jobs.py", "kicks"): "the module defines the public `crontick.django.kick()` itself",
    ("lib/crontick/django/management/__init__.py", "cli"): "`main` would read as this module's own entry point",
    ("lib/crontick/runtime.py", "channels"): "a second `registry` (channels') beside the jobs' registry it also uses",
    ("tests/auth/test_tick_qstash_signature.py", "auth"): "the file's tests call a local `tick()` helper",
    ("tests/cli/test_main_commands.py", "package"): "`crontick` is the helper that runs the installed script",
    ("tests/django/test_management.py", "module"): "the fixture is named `management` after the module it returns",
    ("tests/hooks/test_kick_policy.py", "_"): "imported for its side effect only",
    ("tests/perf/test_round_trips.py", "crontick_alerts"): "the tests' `alerts` fixture",
    ("tests/security/test_search_path.py", "schemas"): "`schema` is the fixture every test there takes",
    ("tests/tick/test_alerts_jobs.py", "alerts_module"): "the tests' `alerts` fixture",
    ("tests/tick/test_alerts_wakeups.py", "alerts_module"): "the tests' `alerts` helper (tests/tick/alerts_support)",
    ("bench/cpu.py", "crontick_drain"): "bench/cpu compares crontick's drain with the peers' `drain` functions",
    ("bench/declared_handlers.py", "schedules"): "`registry` is the jobs' registry in the same function",
}


def aliases() -> dict[tuple[str, str], str]:
    """(file, alias): the crontick module it names, for every import of a crontick module under another name."""
    found = {}
    for base in ("lib", "tests", "bench", "api", "examples"):
        for path in sorted((ROOT / base).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("crontick"):
                    for a in node.names:
                        if a.asname and a.asname != a.name and f"{node.module}.{a.name}" in MODULES:
                            found[where, a.asname] = f"{node.module}.{a.name}"
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.asname and a.name.startswith("crontick") and a.name.split(".")[-1] != a.asname:
                            found[where, a.asname] = a.name
    return found


def test_crontick_modules_are_imported_under_their_own_names() -> None:
    unexplained = {key: module for key, module in aliases().items() if key not in EXCEPTIONS}
    assert unexplained == {}, "import these under their own names, or add a reason to EXCEPTIONS"


def test_every_exception_is_still_an_alias() -> None:
    assert set(EXCEPTIONS) - set(aliases()) == set()


def test_the_scan_finds_an_alias() -> None:
    found = aliases()
    assert found["lib/crontick/app.py", "auth"] == "crontick.auth.tick"
