"""Reminder texts per kind and language: a subject and a body for each, English the fallback.

A booking's language comes from the reminder source's optional `language` column ('nl', 'es-MX',
'pt_BR'; null or missing: English). For a reminder of kind K to a booking in language L, the first
template found is used among (K, L), ('*', L), then the same for L's primary subtag ('es' for
'es-MX'), and last the English one: CRONTICK_REMINDER_SUBJECT and CRONTICK_REMINDER_TEMPLATE
(or an English template declared for K). The words of `{day}`, `{date}` and `{zone}` ("tomorrow",
"Tue 2 Dec", "Amsterdam time") follow the template's language when crontick knows its words.

crontick ships Dutch (`nl`) and Spanish (`es`), for the '24h' kind and for every kind ('*'). An app
adds a language, or changes a shipped text, with `crontick.reminder_template(...)` in a module named
in CRONTICK_HANDLERS, passing `words=crontick.ReminderWords(...)` for a language crontick has no
words for (docs/reminders.md, "Languages").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crontick.errors import ConfigError
from crontick.settings import REMINDER_TEMPLATE_VARIABLES, Settings, html, variables

ANY_KIND = "*"
ENGLISH = "en"


@dataclass(frozen=True)
class ReminderWords:
    """How a language says `{day}`, `{date}` and `{zone}`: 'today', 'tomorrow', 'in {n} days'; the
    weekdays (Monday first) and months (January first) as `{date}` shows them; `date` and `zone` patterns."""

    today: str
    tomorrow: str
    in_days: str  # with {n}
    weekdays: tuple[str, str, str, str, str, str, str]
    months: tuple[str, str, str, str, str, str, str, str, str, str, str, str]
    date: str = "{weekday} {day} {month}"
    zone: str = "{city} time"


@dataclass(frozen=True)
class Template:
    subject: str
    text: str
    language: str  # the language it is written in: its words render {day}, {date} and {zone}
    html: str | None = None  # a Jinja2 template (autoescaped) of the HTML part, for the e-mail channels

    def names(self) -> set[str]:
        """Every variable the template uses (its subject's, text's and HTML's)."""
        found = variables.template_names(self.subject) | variables.template_names(self.text)
        return found | (html.names(self.html) if self.html is not None else set())


WORDS: dict[str, ReminderWords] = {
    ENGLISH: ReminderWords(
        "today", "tomorrow", "in {n} days",
        ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    ),
    "nl": ReminderWords(
        "vandaag", "morgen", "over {n} dagen",
        ("ma", "di", "wo", "do", "vr", "za", "zo"),
        ("jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"),
        zone="tijdzone {city}",
    ),
    "es": ReminderWords(
        "hoy", "mañana", "en {n} días",
        ("lun", "mar", "mié", "jue", "vie", "sáb", "dom"),
        ("ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"),
        zone="hora de {city}",
    ),
}  # fmt: skip

_DUTCH = (
    "Herinnering: uw afspraak {day} om {time}",
    "Hallo {first_name}, een herinnering: uw afspraak is {day}, {date} om {time} ({zone}).",
)
_SPANISH = (
    "Recordatorio: su cita {day} a las {time}",
    "Hola {first_name}, le recordamos su cita {day}, {date} a las {time} ({zone}).",
)
# (kind or '*', language) -> Template. English lives in Settings (CRONTICK_REMINDER_SUBJECT/_TEMPLATE).
_templates: dict[tuple[str, str], Template] = {
    (kind, language): Template(subject, text, language)
    for kind in ("24h", ANY_KIND)
    for language, (subject, text) in (("nl", _DUTCH), ("es", _SPANISH))
}


def normalized(language: str | None) -> str | None:
    """' es_MX ' -> 'es-mx'; blank -> None."""
    if language is None:
        return None
    tag = language.strip().lower().replace("_", "-")
    return tag or None


def reminder_template(
    kind: str,
    language: str,
    *,
    subject: str,
    text: str,
    html: str | None = None,
    words: ReminderWords | None = None,
) -> None:
    """Declare the subject and text of reminders of `kind` ('24h', or '*' for every kind) to bookings in `language`.

    Call it at import time of a module named in CRONTICK_HANDLERS. Both are `str.format` templates
    with the variables of CRONTICK_REMINDER_TEMPLATE; `html`, a Jinja2 template with the same variables
    (autoescaped), is the HTML part the e-mail channels send. `words` says how the language writes `{day}`,
    `{date}` and `{zone}`; without it a language crontick has no words for uses English ones.
    A second declaration of the same kind and language replaces the first.
    """
    tag = normalized(language)
    if tag is None:
        raise ConfigError(f"reminder_template: expected a language such as 'nl' or 'es-MX', got: {language!r}")
    if kind != ANY_KIND:
        try:
            variables.kind_lead(kind)
        except ValueError as exc:
            raise ConfigError(f"reminder_template: {exc}") from None
    row = variables.Variable(f"reminder_template({kind!r}, {language!r})", variables.REMINDERS, "")
    variables.template(row, subject)
    variables.template(row, text)
    if html is not None:
        variables.html_template(row, html)
    if words is not None:
        WORDS[tag] = words
    _templates[(kind, tag)] = Template(subject, text, tag, html)


def choose(kind: str, language: str | None, settings: Settings) -> Template:
    """The template for a reminder of `kind` to a booking in `language` (the module docstring's order)."""
    tag = normalized(language)
    tags = [] if tag is None else [tag, tag.split("-", 1)[0]]
    for t in [*dict.fromkeys(tags), ENGLISH]:
        for k in (kind, ANY_KIND):
            found = _templates.get((k, t))
            if found is not None:
                return found
    return english(settings)


def english(settings: Settings) -> Template:
    """The English template: CRONTICK_REMINDER_SUBJECT, _TEMPLATE and _HTML_TEMPLATE."""
    return Template(settings.reminder_subject, settings.reminder_template, ENGLISH, settings.reminder_html_template)


def source_names(settings: Settings) -> frozenset[str]:
    """The variables some template uses that are not crontick's own: each must be a column of the reminder source
    (crontick.db.source.problem checks it at `crontick migrate` and before a tick's first claim)."""
    used = set().union(*(t.names() for t in (english(settings), *_templates.values())))
    return frozenset(used - set(REMINDER_TEMPLATE_VARIABLES))


def column_values(row: Mapping[str, Any] | None) -> dict[str, str]:
    """The source row's columns as template variables (the claim reads the row as jsonb): text as it is, null as
    empty, numbers and booleans as JSON writes them, timestamps in ISO 8601 (format one in the view to change it)."""
    if not row:
        return {}
    return {
        k: "" if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in row.items()
    }


def words(language: str) -> ReminderWords:
    """The words of `language` (or of its primary subtag), else English."""
    return WORDS.get(language) or WORDS.get(language.split("-", 1)[0]) or WORDS[ENGLISH]
