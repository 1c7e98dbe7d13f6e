"""GitHub Actions workflows as data: parse them, and run a step's script the way a runner does."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.constants import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
_SECRET = re.compile(r"^\$\{\{\s*secrets\.(\w+)\s*\}\}$")


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as the boolean true.
    if True in data:
        data["on"] = data.pop(True)
    return data


def step(workflow: dict[str, Any], step_id: str) -> dict[str, Any]:
    for job in workflow["jobs"].values():
        for candidate in job["steps"]:
            if candidate.get("id") == step_id:
                return dict(candidate)
    raise LookupError(f"expected a step with id {step_id!r}, got none")


def step_env(found: dict[str, Any], secrets: dict[str, str]) -> dict[str, str]:
    """The step's env block with each ${{ secrets.X }} replaced as GitHub would; any other expression is an error."""
    env: dict[str, str] = {}
    for name, value in (found.get("env") or {}).items():
        text = str(value)
        match = _SECRET.match(text)
        if match:
            env[name] = secrets.get(match.group(1), "")  # an unset secret expands to the empty string
        elif "${{" in text:
            raise ValueError(f"expected only secrets in the step env, got: {name}={text}")
        else:
            env[name] = text
    return env


def script_file(found: dict[str, Any], folder: Path) -> Path:
    path = folder / "step.sh"
    path.write_text(found["run"])
    return path


def runner_env(env: dict[str, str], summary: Path) -> dict[str, str]:
    """A runner's environment: PATH and HOME, the step's env, and the step summary file."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "GITHUB_STEP_SUMMARY": str(summary),
        **env,
    }


def bash_command(script: Path) -> list[str]:
    """`shell: bash` on a GitHub runner: bash --noprofile --norc -eo pipefail {0}."""
    return ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]


def run(found: dict[str, Any], env: dict[str, str], folder: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    summary = folder / "step-summary.md"
    summary.touch()
    result = subprocess.run(
        bash_command(script_file(found, folder)),
        env=runner_env(env, summary),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result, summary.read_text()
