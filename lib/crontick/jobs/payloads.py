"""Typed payloads: a handler's pydantic model (`@crontick.handler(type, payload=Model)`), checked at enqueue and
handed to the handler as an instance.

crontick never imports pydantic (the optional extra `crontick[pydantic]`): an app that names a model has imported it,
and an app that names none never loads it. A model is checked where a job of its type is enqueued in a process that
registered its handler (crontick.enqueue, enqueue_many, job.spawn, crontick.django.enqueue): a payload that does
not fit is a CrontickError in the caller's transaction, before any statement, naming each field that failed, and
the job keeps the model's own JSON (its defaults filled in, its coercions made), so the handler reads back what was
checked. What no such process checked (the SQL function, another service, an inbound hook, a model changed since)
is checked again when the job runs: one that does not fit fails the job at once (a PermanentError: a retry would
find the same payload).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from crontick.errors import ConfigError, CrontickError, PermanentError

ERRORS_SHOWN = 5  # the first failures a message names; the count says how many there were


def check_model(where: str, model: Any) -> None:
    """@crontick.handler's `payload=`: a pydantic (v2) model class, else a ConfigError naming `where`."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(model, type) or not issubclass(model, pydantic.BaseModel):
        raise ConfigError(
            f"{where}: expected payload= as a pydantic model class (pip install 'crontick[pydantic]'), got {model!r:.200}"
        )


def checked(where: str, model: Any, payload: Any, error: type[CrontickError] = CrontickError) -> Any:
    """`payload` (a dict, or an instance of `model`) as the JSON a job of `model`'s type keeps: the model's dump.
    One that does not fit `model` is an `error` naming `where` and the fields that failed."""
    if not isinstance(payload, model):
        payload = _validated(model, payload, lambda problem: error(f"{where}: {problem}"))
    return payload.model_dump(mode="json")


def plain(payload: Any) -> Any:
    """A pydantic model instance enqueued for a type with no model registered here, as its JSON; else `payload`."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(payload, pydantic.BaseModel):
        return payload.model_dump(mode="json")
    return payload


def typed(func: Callable[..., Any], model: Any) -> Callable[..., Any]:
    """`func(payload, job)` called with `model` made from the job's payload (sync or async, as `func` is); a payload
    that does not fit fails the job at once (PermanentError), without calling `func`."""

    def instance(payload: Any, job: Any) -> Any:
        where = f"job {job.id} ({job.type})"
        return _validated(model, payload, lambda problem: PermanentError(f"{where}: {problem}"))

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def call_async(payload: Any, job: Any) -> Any:
            return await func(instance(payload, job), job)

        return call_async

    @functools.wraps(func)
    def call(payload: Any, job: Any) -> Any:
        return func(instance(payload, job), job)

    return call


def schema(model: Any) -> dict[str, Any]:
    """The JSON Schema of `model`'s payloads (the admin's job page shows it); for a model pydantic cannot describe
    (a field of an arbitrary type), a note saying so instead of a failed page."""
    try:
        result: dict[str, Any] = model.model_json_schema()
    except Exception as exc:  # noqa: BLE001 - pydantic's own errors for a field it has no schema for
        return {"description": f"pydantic gives no JSON Schema for {model.__name__} ({type(exc).__name__})"}
    return result


def _validated(model: Any, payload: Any, error: Callable[[str], Exception]) -> Any:
    from pydantic import ValidationError  # only with a model: pydantic is imported already

    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise error(describe(model, exc.errors(include_url=False, include_input=False))) from None


def describe(model: Any, errors: list[Any]) -> str:
    """ "expected a payload matching Model, got N errors: field.path: message; ..." (the first ERRORS_SHOWN); no
    input value is repeated (a payload may hold what should not reach a log)."""
    shown = "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or '(the payload)'}: {e['msg']}" for e in errors[:ERRORS_SHOWN]
    )
    more = f"; and {len(errors) - ERRORS_SHOWN} more" if len(errors) > ERRORS_SHOWN else ""
    count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
    return f"expected a payload matching {model.__name__}, got {count}: {shown}{more}"
