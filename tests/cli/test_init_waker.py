"""`crontick init --waker`: the tick workflow becomes the daily safety net, and the waker's variables (from the one
table crontick.settings.wakeups checks them with) are printed with the cost; a bad provider is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crontick.cli.init import FIXED_SCHEDULE, VERCEL_CRON
from crontick.settings.wakeups import WAKER_NEEDS
from tests.support.constants import ROOT
from tests.support.run_cli import cli_env, crontick

WORKFLOW = ".github/workflows/tick.yml"


def init(repo: Path, *args: str) -> tuple[int, str, str]:
    result = crontick("init", "--dir", str(repo), *args, env=cli_env(None))
    return result.returncode, result.stdout, result.stderr


def schedules(path: Path) -> list[str]:
    workflow = yaml.safe_load(path.read_text())
    return [entry["cron"] for entry in workflow[True]["schedule"]]  # YAML 1.1 reads the key `on` as True


@pytest.mark.parametrize("waker", ["qstash", "eventbridge", "cloudtasks", "vercel-queue"])
def test_each_waker_gets_a_daily_safety_net_and_its_variables(tmp_path: Path, waker: str) -> None:
    code, out, err = init(tmp_path, "--waker", waker)
    assert code == 0, err
    assert schedules(tmp_path / WORKFLOW) == [VERCEL_CRON["schedule"]]
    assert schedules(ROOT / WORKFLOW) == ["7,22,37,52 * * * *"]  # the packaged one is untouched
    assert f"CRONTICK_WAKER={waker}" in out
    for _, variable, _ in WAKER_NEEDS.get(waker, ()):
        assert variable in out
    assert "once a day" in out and "2,880" in out and "instead of 96" in out


def test_vercel_queue_names_its_subscriber(tmp_path: Path) -> None:
    code, out, _ = init(tmp_path, "--waker", "vercel-queue")
    assert code == 0
    assert "VERCEL_QUEUE_TOKEN" in out and 'entrypoint = "crontick.vercel_subscriber:run_tick"' in out


def test_without_a_waker_the_workflow_ticks_every_15_minutes(tmp_path: Path) -> None:
    code, out, _ = init(tmp_path)
    assert code == 0
    assert FIXED_SCHEDULE in (tmp_path / WORKFLOW).read_text()
    assert "CRONTICK_WAKER" not in out


def test_switching_an_existing_set_up_to_a_waker_needs_force(tmp_path: Path) -> None:
    assert init(tmp_path)[0] == 0
    code, out, _ = init(tmp_path, "--waker", "qstash")
    assert code == 1 and f"exists, differs: {WORKFLOW}" in out and "wrote nothing" in out
    assert schedules(tmp_path / WORKFLOW) == ["7,22,37,52 * * * *"]
    code, out, _ = init(tmp_path, "--waker", "qstash", "--force")
    assert code == 0 and schedules(tmp_path / WORKFLOW) == [VERCEL_CRON["schedule"]]


def test_an_unknown_waker_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    code, out, err = init(tmp_path, "--waker", "pubsub")
    assert code == 2 and "invalid choice: 'pubsub'" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
