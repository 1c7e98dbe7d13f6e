"""@crontick.handler's flow-control options: kept on the registered handler, bad values refused in one line."""

from __future__ import annotations

from typing import Any

import pytest

import crontick
from crontick.errors import ConfigError
from crontick.jobs import registry


def test_the_flow_options_are_kept_on_the_handler() -> None:
    @crontick.handler("t_options.reply", priority=-10, group_concurrency=2, rate_limit="llm")
    def reply(payload: Any, job: crontick.Job) -> None: ...

    spec = registry.get("t_options.reply")
    assert spec is not None and (spec.priority, spec.group_concurrency, spec.rate_limit) == (-10, 2, "llm")
    plain = registry.get("webhook")
    assert plain is not None and (plain.priority, plain.group_concurrency, plain.rate_limit) == (0, 1, None)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"priority": 2**31}, "priority as a 32-bit integer"),
        ({"priority": True}, "priority as a 32-bit integer"),
        ({"group_concurrency": 0}, "group_concurrency as an integer from 1 to 1000"),
        ({"group_concurrency": 2**31}, "group_concurrency as an integer from 1 to 1000"),  # was every claim's error
        ({"rate_limit": ""}, "rate_limit as a limit's name"),
    ],
)
def test_bad_flow_options_are_refused_naming_the_type(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words) as refused:
        crontick.handler("t_options.bad", **options)
    assert "'t_options.bad'" in str(refused.value)
