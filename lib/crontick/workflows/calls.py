"""How a step's function is called and its result kept: the JSON a step records, bounded."""

from __future__ import annotations

import json
from typing import Any

from crontick.errors import StepError
from crontick.logs import RunningJob
from crontick.text import json_problem

# The most a step's result may take as JSON text (UTF-8 bytes). Keep big things (documents,
# audio) in your own storage and return their key.
STEP_RESULT_MAX_BYTES = 64 * 1024


def encoded(job: RunningJob, name: str, value: Any) -> str:
    """The step's result as JSON text, or a StepError naming the step."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise StepError(
            f"job {job.id} ({job.type}) step {name!r}: expected a JSON result (dict, list, str, number, bool or "
            f"None), got {type(value).__name__}: {exc}"
        ) from None
    # Refused before anything is written: the result would go with other jobs' steps (group commit), and one that
    # jsonb refuses would fail that statement for all of them.
    if problem := json_problem(text):
        raise StepError(f"job {job.id} ({job.type}) step {name!r}: {problem}")
    size = len(text.encode())
    if size > STEP_RESULT_MAX_BYTES:
        raise StepError(
            f"job {job.id} ({job.type}) step {name!r}: expected a result of at most {STEP_RESULT_MAX_BYTES} bytes "
            f"of JSON (crontick.workflows.steps.STEP_RESULT_MAX_BYTES), got {size}; store it elsewhere and return its key"
        )
    return text
