"""Reminder HTML bodies: Jinja2 templates, autoescaped, read and checked at start-up and rendered per reminder.

One environment for both, so a template that passes the check renders the same way: autoescaping on
(a customer's name or a source column holding `<script>` is shown as text), sandboxed (a template
cannot reach Python attributes), and an unknown variable an error rather than an empty string.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Jinja2 is imported only where an HTML template is set
    from jinja2.sandbox import SandboxedEnvironment


@functools.cache
def environment() -> SandboxedEnvironment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)


def names(source: str) -> set[str]:
    """The variables the template uses; ValueError (with Jinja2's reason and line) when it does not parse."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        parsed = environment().parse(source)
    except TemplateSyntaxError as exc:
        raise ValueError(f"{exc.message} (line {exc.lineno})") from None
    return set(meta.find_undeclared_variables(parsed))


def render(source: str, variables: Mapping[str, Any]) -> str:
    """The HTML for one reminder; ValueError naming Jinja2's reason when it cannot be rendered (an unknown variable)."""
    from jinja2 import TemplateError

    try:
        return str(_compiled(source).render(**variables))
    except TemplateError as exc:
        raise ValueError(f"the HTML template: {type(exc).__name__}: {exc}") from None


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> Any:
    return environment().from_string(source)
