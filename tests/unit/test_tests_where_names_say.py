"""Tests where the module's name says (Starlette's `tests/test_<module>.py`), read off the file tree.

The rule: the tests of `lib/crontick/<package>/<module>.py` (at any depth below the package) are
`tests/<package>/test_<module>.py` and `tests/<package>/test_<module>_<what>.py`; of a top-level module
`lib/crontick/<module>.py`, every `tests/<module>/test_*.py`; of a package's `__init__.py`,
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
# Files outside those folders whose name names no module, each with its reason.
DELIVERY = "crontick.reminders.delivery's channels; they move with the channels to a package of their own (item 5)"
FILES = {
    "tests/reminders/test_failures.py": DELIVERY,
    "tests/reminders/test_odd_answers.py": DELIVERY,
    "tests/reminders/test_wire.py": DELIVERY,
}


def counted_modules(lib: Path = LIB) -> list[str]:
    """Every module the rule counts, as its path below lib/crontick (`tick/claim.py`)."""
    return sorted(
        p.relative_to(lib).as_posix()
        for p in lib.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
        and "__pycache__" not in p.parts
        and p.relative_to(lib).parts[0] not in UNCOUNTED_PACKAGES
    )


def module_of(test: str, modules: list[str]) -> str | None:
    """The module the test file at `test` (a path below tests/, `tick/test_claim_queue.py`) tests by its name:
    the longest module name it starts with, so `test_job_spans.py` is job_spans's and not job's."""
    parts = Path(test).parts
    if len(parts) < 2 or not parts[-1].startswith("test_"):
        return None
    folder, name = parts[0], Path(parts[-1]).stem.removeprefix("test_")
    if f"{folder}.py" in modules:  # a top-level module's folder: every test in it is that module's
        return f"{folder}.py"
    named = [
        m
        for m in modules
        if m.startswith(folder + "/") and (name == (stem := Path(m).stem) or name.startswith(stem + "_"))
    ]
    if named:
        return max(named, key=lambda m: len(Path(m).stem))
    package = f"{folder}/__init__.py"
    if name == folder or name.startswith(folder + "_"):
        return package
    return None


def files_of_tests(tests: Path = TESTS) -> list[str]:
    return sorted(p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py") if "__pycache__" not in p.parts)


def coverage(modules: list[str], tests: list[str]) -> tuple[float, list[str]]:
    """The share of `modules` some file of `tests` names, and the modules none does."""
    tested = {module_of(t, modules) for t in tests}
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
        and module_of(t, modules) not in {*modules, *packages}
    ]
    assert unnamed == [], (
        "each test file is tests/<package>/test_<module>[_<what>].py (or in a folder of FOLDERS, or in FILES with "
        f"its reason): {unnamed}"
    )


def test_each_reason_names_what_exists() -> None:
    gone = [f for f in FOLDERS if not (TESTS / f).is_dir()] + [f for f in FILES if not (ROOT / f).is_file()]
    assert gone == [], f"reasons for folders or files that are gone (drop them): {gone}"


MODULES = ["app.py", "jobs/job.py", "jobs/job_spans.py", "tick/claim.py", "django/management/commands/crontick_tick.py"]


@pytest.mark.parametrize(
    ("test", "module"),
    [
        pytest.param("tick/test_claim.py", "tick/claim.py", id="the module's own name"),
        pytest.param("tick/test_claim_queue.py", "tick/claim.py", id="the module's name and what"),
        pytest.param("tick/test_claimed.py", None, id="a longer word is not the module"),
        pytest.param("jobs/test_job_spans.py", "jobs/job_spans.py", id="the longest module name"),
        pytest.param("jobs/test_job_outcomes.py", "jobs/job.py", id="a shorter module name and what"),
        pytest.param("app/test_anything.py", "app.py", id="a top-level module's folder"),
        pytest.param("django/test_crontick_tick.py", "django/management/commands/crontick_tick.py", id="deeper"),
        pytest.param("jobs/test_jobs_api.py", "jobs/__init__.py", id="the package's own name"),
        pytest.param("tick/support.py", None, id="not a test file"),
        pytest.param("test_loose.py", None, id="no folder"),
    ],
)
def test_a_test_file_names_its_module(test: str, module: str | None) -> None:
    assert module_of(test, MODULES) == module


def test_the_share_counts_each_module_once_and_lists_the_rest() -> None:
    share, missing = coverage(MODULES, ["tick/test_claim_a.py", "tick/test_claim_b.py", "app/test_x.py"])
    assert (share, missing) == (
        0.4,
        ["jobs/job.py", "jobs/job_spans.py", "django/management/commands/crontick_tick.py"],
    )
