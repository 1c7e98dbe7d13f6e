"""The named SQL blocks of sql/*.sql (`-- name: x`), loaded once, composed for crontick's schema, looked up by name."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.abc import Traversable

from crontick.db import schema as schemas
from crontick.errors import ConfigError


def sql_dir() -> Traversable:
    """The sql/ folder as shipped inside the package (crontick/sql in the wheel)."""
    return resources.files("crontick").joinpath("sql")


_NAME_LINE = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_COMMENT_LINE = re.compile(r"^[ \t]*--.*(?:\n|$)", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split a .sql file into {name: sql} at each `-- name: x` line."""
    parts = _NAME_LINE.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"expected unique query names, got {name!r} twice")
        queries[name] = body.strip().rstrip(";")
    return queries


def load_queries() -> dict[str, str]:
    """Every named block of every sql/*.sql file (queries.sql, reminders.sql, …); names are unique."""
    queries: dict[str, str] = {}
    for f in sorted(sql_dir().iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".sql"):
            continue
        for name, text in parse_queries(f.read_text(encoding="utf-8")).items():
            if name in queries:
                raise ValueError(f"expected unique query names across sql/*.sql, got {name!r} twice")
            queries[name] = without_comment_lines(text)
    return queries


def without_comment_lines(text: str) -> str:
    """A statement without its whole-line comments and indentation, which are there for people.

    The server would lex them on every call (no statement is prepared, for poolers), and
    psycopg caches its parse of a statement only up to 4 KiB. No query of ours has a string
    literal spanning lines, so stripping each line changes no value.
    """
    lines = (line.strip() for line in _COMMENT_LINE.sub("", text).splitlines())
    return "\n".join(line for line in lines if line)


class _Composed(Mapping[str, str]):
    """Every query composed for the schema in use; one schema per process.

    Composed on first use, for CRONTICK_SCHEMA (so that `crontick.enqueue` in a process that never
    built the app names the right schema), unless `use_schema` (a Runtime's Settings) chose first.
    """

    def __init__(self, templates: Mapping[str, str]) -> None:
        self._templates = templates
        self.schema: str | None = None
        self.composed: dict[str, str] | None = None

    def use(self, schema: str) -> None:
        if self.schema is not None:
            if self.schema != schema:
                raise ConfigError(
                    f"{schemas.SCHEMA_VARIABLE}: expected one schema per process, got {schema!r} after {self.schema!r}"
                )
            return
        self.composed = {name: schemas.compose(text, schemas.checked(schema)) for name, text in self._templates.items()}
        self.schema = schema

    def all(self) -> dict[str, str]:
        if self.composed is None:
            self.use(schemas.from_env())
        assert self.composed is not None
        return self.composed

    def __getitem__(self, name: str) -> str:
        return self.all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self.all())


QUERIES = _Composed(load_queries())


def use_schema(schema: str) -> None:
    """Compose every statement for `schema`; ConfigError if this process already uses another one."""
    QUERIES.use(schema)


def current_schema() -> str:
    """The schema this process's statements name."""
    QUERIES.all()
    assert QUERIES.schema is not None
    return QUERIES.schema


_for_source: dict[tuple[str, schemas.Source], str] = {}


def query(name: str, source: schemas.Source | None = None) -> str:
    """The named statement for this process's schema; `source` (a Settings' reminder_source_parts) fills
    `{reminder_source}`, which is otherwise crontick's own bookings. Each (name, source) is composed once."""
    composed = (QUERIES.composed or QUERIES.all())[name]
    if source is None or QUERIES.schema is None or source == schemas.default_source(QUERIES.schema):
        return composed
    key = (name, source)
    found = _for_source.get(key)
    if found is None:
        found = _for_source[key] = schemas.compose(QUERIES._templates[name], QUERIES.schema, source)
    return found
