"""The rows of the `smtp` reminder channel and of reminders' HTML part (issue 38).

A base class of Settings, so these rows are Settings fields like every other (crontick.settings
reads them with the same table): kept here so the one module of the rest stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass

from crontick.settings import variables
from crontick.settings.variables import REMINDERS, setting

DEFAULT_SMTP_PORT = 587  # submission, with STARTTLS


@dataclass(frozen=True)
class MailSettings:
    """The smtp channel's and the HTML template's rows of Settings (see the module docstring)."""

    # fmt: off
    smtp_host: str | None = setting("CRONTICK_SMTP_HOST", REMINDERS, None, needed_by=("smtp",),
        needed_as="your SMTP server's host name such as smtp.example.com", doc="The `smtp` channel's server (Python's "
        "`smtplib`; the `django` channel sends through Django's `EMAIL_BACKEND` and `DEFAULT_FROM_EMAIL` instead). "
        "Its sender is `CRONTICK_EMAIL_FROM`.")
    smtp_port: int = setting("CRONTICK_SMTP_PORT", REMINDERS, DEFAULT_SMTP_PORT, minimum=1, maximum=65535,
        doc="The SMTP server's port.")
    smtp_username: str | None = setting("CRONTICK_SMTP_USERNAME", REMINDERS, None,
        doc="The SMTP login; unset: the `smtp` channel does not log in (a local relay).")
    smtp_password: str | None = setting("CRONTICK_SMTP_PASSWORD", REMINDERS, None, secret=True,
        doc="The SMTP password, with `CRONTICK_SMTP_USERNAME`.")
    smtp_starttls: bool = setting("CRONTICK_SMTP_STARTTLS", REMINDERS, True, doc="On by default: the `smtp` channel "
        "refuses a server that does not offer STARTTLS. `false` sends in the clear, for a local relay only.")
    reminder_html_template: str | None = setting("CRONTICK_REMINDER_HTML_TEMPLATE", REMINDERS, None,
        check=variables.html_template, doc="The reminder's HTML part, a Jinja2 template (autoescaped) with the "
        "template variables, sent beside the text by the `email`, `smtp` and `django` channels; unset: text only "
        "(see [HTML](reminders.md#html)).")
    # fmt: on
