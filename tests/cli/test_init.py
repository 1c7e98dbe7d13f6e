"""`crontick init` in an existing repository: the installed script writes the deploy files, merges
vercel.json keeping everything of the user's, and never overwrites a file without --force."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from crontick.app import app as crontick_app
from crontick.cli.init import merge_vercel
from tests.support.constants import ROOT
from tests.support.run_cli import cli_env, crontick

USERS_VERCEL = {
    "$schema": "https://openapi.vercel.sh/vercel.json",
    "framework": "nextjs",
    "functions": {"api/users.py": {"maxDuration": 10, "memory": 512}},
    "crons": [{"path": "/api/nightly", "schedule": "0 3 * * *"}],
    "rewrites": [{"source": "/", "destination": "/home"}, {"source": "/blog/:slug", "destination": "/b/:slug"}],
    "headers": [{"source": "/(.*)", "headers": [{"key": "X-Frame-Options", "value": "DENY"}]}],
}


def init(repo: Path, *args: str) -> tuple[int, str, str]:
    result = crontick("init", "--dir", str(repo), *args, env=cli_env(None))
    return result.returncode, result.stdout, result.stderr


def test_an_empty_repository_gets_every_file_and_each_function_serves_crontick(tmp_path: Path) -> None:
    code, out, err = init(tmp_path)
    assert code == 0, err
    for path in ("api/cron/tick.py", "api/health.py", "api/hooks/[name].py", "api/admin.py"):
        assert f"create    {path}" in out
        assert runpy.run_path(str(tmp_path / path))["app"] is crontick_app
    workflow = (tmp_path / ".github/workflows/tick.yml").read_text()
    assert workflow == (ROOT / ".github/workflows/tick.yml").read_text()
    config = json.loads((tmp_path / "vercel.json").read_text())
    assert set(config["functions"]) == {"api/cron/tick.py", "api/health.py", "api/hooks/*.py", "api/admin.py"}
    assert config["crons"] == [{"path": "/api/cron/tick", "schedule": "17 4 * * *"}]
    assert {r["source"] for r in config["rewrites"]} == {"/admin", "/admin/:path*", "/api/admin/:path*"}
    assert "CRON_SECRET" in out and "crontick migrate" in out  # what to set next


def test_the_users_vercel_json_keeps_everything_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "vercel.json").write_text(json.dumps(USERS_VERCEL, indent=4))
    code, out, err = init(tmp_path)
    assert code == 0, err
    assert "update    vercel.json" in out
    merged = json.loads((tmp_path / "vercel.json").read_text())
    for key in ("$schema", "framework", "headers"):
        assert merged[key] == USERS_VERCEL[key]
    assert merged["functions"]["api/users.py"] == {"maxDuration": 10, "memory": 512}
    assert merged["crons"][0] == USERS_VERCEL["crons"][0] and len(merged["crons"]) == 2
    assert merged["rewrites"][:2] == USERS_VERCEL["rewrites"]  # the user's "/" stays theirs
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, _ = init(tmp_path)
    assert code == 0
    assert "create" not in out and "update" not in out and out.count("unchanged") == 6
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_file_that_differs_is_not_overwritten_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api/health.py").write_text("# the user's own health check\n")
    code, out, _ = init(tmp_path)
    assert code == 1
    assert "exists, differs: api/health.py" in out and "wrote nothing" in out
    assert (tmp_path / "api/health.py").read_text() == "# the user's own health check\n"
    assert not (tmp_path / "vercel.json").exists() and not (tmp_path / "api/cron").exists()
    code, out, err = init(tmp_path, "--force")
    assert code == 0, err
    assert runpy.run_path(str(tmp_path / "api/health.py"))["app"] is crontick_app


def test_a_glob_of_the_users_that_covers_the_functions_is_left_alone() -> None:
    merged, added = merge_vercel({"functions": {"api/**/*.py": {"maxDuration": 300}}})
    assert merged["functions"] == {"api/**/*.py": {"maxDuration": 300}}
    assert not any(a.startswith("function") for a in added)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("{not json", "expected vercel.json to be JSON"), ("[]", "to hold a JSON object"), ('{"crons": {}}', "'crons'")],
)
def test_a_broken_vercel_json_is_one_line_and_nothing_is_written(tmp_path: Path, content: str, fragment: str) -> None:
    (tmp_path / "vercel.json").write_text(content)
    code, out, err = init(tmp_path)
    assert code == 1
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "api").exists() and (tmp_path / "vercel.json").read_text() == content


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry below `folder`, without following symlinks: a file's bytes, a link's target, a folder."""
    found: dict[str, bytes | str] = {}
    for entry in sorted(folder.rglob("*")):
        name = str(entry.relative_to(folder))
        if entry.is_symlink():
            found[name] = "-> " + str(entry.readlink())
        elif entry.is_file():
            found[name] = entry.read_bytes()
        else:
            found[name] = "dir"
    return found


def _link(repo: Path, path: str, target: Path) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).symlink_to(target)


@pytest.mark.parametrize(
    ("path", "target", "fragment"),
    [
        ("api/admin.py", "outside/admin.py", "expected api/admin.py to stay inside"),  # a file of someone else's
        ("vercel.json", "outside/vercel.json", "expected vercel.json to stay inside"),
        ("api/health.py", "outside/missing/health.py", "expected api/health.py to stay inside"),  # dangling, outside
        ("api/health.py", "repo/api/gone.py", "got a dangling symlink"),  # dangling, inside
        ("api", "outside", "expected api to stay inside"),  # a folder above the files
        (".github/workflows", "outside", "expected .github/workflows to stay inside"),
        ("api/cron", "repo/api/cron", "got a symlink loop"),
    ],
)
def test_a_symlink_out_of_the_folder_or_to_nothing_is_one_line_and_nothing_is_written(
    tmp_path: Path, path: str, target: str, fragment: str
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "admin.py").write_text("# not the repository's\n")
    (outside / "vercel.json").write_text('{"framework": "someone else\'s"}\n')
    _link(repo, path, tmp_path / target)
    before = _tree(tmp_path)
    code, out, err = init(repo)
    assert code == 1, out
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _tree(tmp_path) == before  # nothing written, inside the repository or out of it


def test_a_symlink_that_stays_inside_the_folder_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "functions/api").mkdir(parents=True)
    (tmp_path / "api").symlink_to(tmp_path / "functions/api")
    code, out, err = init(tmp_path)
    assert code == 0, err
    assert runpy.run_path(str(tmp_path / "functions/api/admin.py"))["app"] is crontick_app
