"""The SQL functions with two bodies edited in step (a fast path beside the general one) mark the parts the
two share, `-- twin begin <name>` ... `-- twin end <name>`: each such part is the same text wherever it
appears (indentation and comments aside), so an edit to one body that misses the other fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crontick import db

FUNCTIONS = Path(str(db.sql_dir())) / "functions"
# Each file with twin parts, and their names: a part whose marks are lost fails here too.
TWINS = {
    "job_claim_due": {"expire", "lease", "returning", "answer"},
    "job_record_outcomes": {"wake_waits", "type_rollup_head", "type_rollup_tail", "log_and_answer", "groups"},
}
MARK = re.compile(r"^\s*-- twin (begin|end) (\w+)\s*$", re.MULTILINE)
PART = re.compile(r"^\s*-- twin begin (\w+)\s*\n(.*?)^\s*-- twin end \1\s*$", re.MULTILINE | re.DOTALL)


def parts(text: str) -> dict[str, list[str]]:
    """Each marked part by name, as its statement's text: comments, indentation and blank lines left out."""
    found: dict[str, list[str]] = {}
    for name, body in PART.findall(text):
        code = [re.sub(r"\s*--.*$", "", line).strip() for line in body.splitlines()]
        found.setdefault(name, []).append("\n".join(line for line in code if line))
    return found


@pytest.mark.parametrize("stem", sorted(TWINS))
def test_each_twin_part_is_the_same_text_in_both_bodies(stem: str) -> None:
    text = (FUNCTIONS / f"{stem}.sql").read_text(encoding="utf-8")
    found = parts(text)
    assert set(found) == TWINS[stem]
    assert len(MARK.findall(text)) == 2 * sum(len(copies) for copies in found.values())  # every mark pairs up
    for name, copies in found.items():
        assert len(copies) == 2, name
        assert copies[0] == copies[1], name


def test_only_the_files_named_here_have_twin_parts() -> None:
    marked = {path.stem for path in FUNCTIONS.glob("*.sql") if MARK.search(path.read_text(encoding="utf-8"))}
    assert marked == set(TWINS)


def test_a_difference_between_twins_is_found() -> None:
    text = "-- twin begin a\nselect 1,\n  2\n-- twin end a\n-- twin begin a\nselect 1, -- why\n  3\n-- twin end a\n"
    assert parts(text) == {"a": ["select 1,\n2", "select 1,\n3"]}
