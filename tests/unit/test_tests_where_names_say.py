"""Tests where the module's name says (Starlette's `tests/test_<module>.py`), read off the file tree.

The rule: the tests of `lib/crontick/<package>/<module>.py` (at any depth below the package) are
`tests/<package>/test_<module>.py` and `tests/<package>/test_<module>_<what>.py`; of a top-level module
`lib/crontick/<module>.py`, every `tests/<module>/test_*.py`; of every module of a subpackage (the Django
commands), `tests/<package>/test_<subpackage>_<what>.py`; of a package's `__init__.py`,
`tests/<package>/test_<package>_<what>.py`. At least 85 % of the modules have a test so; every test
file names its module, or sits in a folder (or is a file) listed below with the reason it does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.constants import ROOT

LIB = ROOT / "lib" / "crontick"
TESTS = ROOT / "tests"
AT_LEAST = 0.85
# Not counted: package markers and entry points (`__init__.py`, `__main__.py`), and admin/, which is being
# regrouped by resource with tests/admin (issue 34 item 3); the lead maps admin's modules once that lands.
UNCOUNTED_PACKAGES = frozenset({"admin"})

# Folders whose tests check a property across modules, not one module: their files need not name one.
FOLDERS = {
    "admin": "the dashboard, regrouped with lib/crontick/admin by resource (issue 34 item 3), then mapped",
    "chaos": "each `make chaos` scenario in its short size: the whole system under faults",
    "deploy": "each host's deploy as it runs: the Vercel function loaded by path, the GitHub workflows' scripts",
    "django": "Django projects run as their users run them (examples/django_project, tests/django/booking_project)",
    "docs": "the docs stay true to the code",
    "packaging": "the wheel carries every file the code loads",
    "perf": "SQL statements on the wire across a whole tick, the same for 1, 100 and 1,000 jobs",
    "pooler": "the queue and tick tests again through a real PgBouncer in transaction mode",
    "security": "each fix of a security review, whichever modules it crosses",
    "support": "helpers more than one folder uses; no tests",
    "unit": "the house's rules over all of lib/ and tests/: the import graph, the tests' layout, this file",
}
# Files outside those folders whose name names no module, each with its reason (none today).
FILES: dict[str, str] = {}


def counted_modules(lib: Path = LIB) -> list[str]:
    """Every module the rule counts, as its path below lib/crontick (`tick/claim.py`)."""
    return sorted(
        p.relative_to(lib).as_posix()
        for p in lib.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
        and "__pycache__" not in p.parts
        and p.relative_to(lib).parts[0] not in UNCOUNTED_PACKAGES
    )


def _names(name: str, word: str) -> bool:
    return name == word or name.startswith(word + "_")


def modules_of(test: str, modules: list[str]) -> list[str]:
    """The modules the test file at `test` (a path below tests/, `tick/test_claim_queue.py`) tests by its name:
    the one with the longest name it starts with (`test_job_spans.py` is job_spans's, not job's); else every
    module of the subpackage it names (`django/test_management.py`); else its package's `__init__.py`."""
    parts = Path(test).parts
    if len(parts) < 2 or not parts[-1].startswith("test_"):
        return []
    folder, name = parts[0], Path(parts[-1]).stem.removeprefix("test_")
    if f"{folder}.py" in modules:  # a top-level module's folder: every test in it is that module's
        return [f"{folder}.py"]
    below = [m for m in modules if m.startswith(folder + "/")]
    named = [m for m in below if _names(name, Path(m).stem)]
    if named:
        return [max(named, key=lambda m: len(Path(m).stem))]
    in_subpackage = [m for m in below if any(_names(name, part) for part in Path(m).parts[1:-1])]
    if in_subpackage:
        return in_subpackage
    return [f"{folder}/__init__.py"] if _names(name, folder) else []


def files_of_tests(tests: Path = TESTS) -> list[str]:
    return sorted(p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py") if "__pycache__" not in p.parts)


def coverage(modules: list[str], tests: list[str]) -> tuple[float, list[str]]:
    """The share of `modules` some file of `tests` names, and the modules none does."""
    tested = {m for t in tests for m in modules_of(t, modules)}
    missing = [m for m in modules if m not in tested]
    return 1 - len(missing) / len(modules), missing


def test_at_least_85_percent_of_the_modules_have_a_test_where_their_name_says() -> None:
    share, missing = coverage(counted_modules(), files_of_tests())
    print(f"{share:.1%} of lib/crontick's modules have a test where their name says; without one: {missing}")
    assert share >= AT_LEAST, f"{share:.1%} is under {AT_LEAST:.0%}; modules without a test: {missing}"


def test_every_test_file_names_its_module_or_has_a_reason() -> None:
    modules = counted_modules()
    # A package's __init__ is not counted, but its tests are named after it: tests/settings/test_settings_env.py.
    packages = {f"{p.parent.relative_to(LIB).as_posix()}/__init__.py" for p in LIB.rglob("__init__.py")}
    unnamed = [
        t
        for t in files_of_tests()
        if Path(t).parts[0] not in FOLDERS
        and f"tests/{t}" not in FILES
        and not set(modules_of(t, modules)) & {*modules, *packages}
    ]
    assert unnamed == [], (
        "each test file is tests/<package>/test_<module>[_<what>].py (or in a folder of FOLDERS, or in FILES with "
        f"its reason): {unnamed}"
    )


def test_each_reason_names_what_exists() -> None:
    gone = [f for f in FOLDERS if not (TESTS / f).is_dir()] + [f for f in FILES if not (ROOT / f).is_file()]
    assert gone == [], f"reasons for folders or files that are gone (drop them): {gone}"


MODULES = [
    "app.py",
    "jobs/job.py",
    "jobs/job_spans.py",
    "tick/claim.py",
    "django/asgi.py",
    "django/management/commands/crontick_tick.py",
    "django/management/commands/crontick_jobs.py",
]
COMMANDS = ["django/management/commands/crontick_tick.py", "django/management/commands/crontick_jobs.py"]


@pytest.mark.parametrize(
    ("test", "tested"),
    [
        pytest.param("tick/test_claim.py", ["tick/claim.py"], id="the module's own name"),
        pytest.param("tick/test_claim_queue.py", ["tick/claim.py"], id="the module's name and what"),
        pytest.param("tick/test_claimed.py", [], id="a longer word is not the module"),
        pytest.param("jobs/test_job_spans.py", ["jobs/job_spans.py"], id="the longest module name"),
        pytest.param("jobs/test_job_outcomes.py", ["jobs/job.py"], id="a shorter module name and what"),
        pytest.param("app/test_anything.py", ["app.py"], id="a top-level module's folder"),
        pytest.param("django/test_crontick_tick.py", [COMMANDS[0]], id="a module deeper down"),
        pytest.param("django/test_management.py", COMMANDS, id="every module of the subpackage it names"),
        pytest.param("django/test_commands_jobs.py", COMMANDS, id="a subpackage's name and what"),
        pytest.param("jobs/test_jobs_api.py", ["jobs/__init__.py"], id="the package's own name"),
        pytest.param("tick/support.py", [], id="not a test file"),
        pytest.param("test_loose.py", [], id="no folder"),
    ],
)
def test_a_test_file_names_what_it_tests(test: str, tested: list[str]) -> None:
    assert modules_of(test, MODULES) == tested


def test_the_share_counts_each_module_once_and_lists_the_rest() -> None:
    share, missing = coverage(MODULES, ["tick/test_claim_a.py", "tick/test_claim_b.py", "app/test_x.py"])
    assert (round(share, 3), missing) == (0.286, [m for m in MODULES if m not in ("app.py", "tick/claim.py")])


def test_no_two_test_files_share_a_name() -> None:
    """pytest imports test modules by their basename (tests/ folders are not packages): two with one name fail
    the whole run at collection ("import file mismatch")."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
