"""The rows of precise wake-ups (crontick.wakers) and of Google's OIDC for the tick, and their checks.

A base class of Settings, so these rows are Settings fields like every other (crontick.settings
reads them with the same table): kept here so the one module of the rest stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crontick.errors import ConfigError
from crontick.settings import variables
from crontick.settings.variables import SCHEDULER_AUTH, WAKEUPS, Variable, setting

# CRONTICK_WAKER's values: none, or a provider of crontick.wakers.registry.
WAKERS = ("none", "qstash", "eventbridge", "cloudtasks", "vercel-queue")

DEFAULT_WAKEUP_GRACE_SECONDS = 300.0
DEFAULT_WAKEUP_TIMEOUT_SECONDS = 3.0
DEFAULT_VERCEL_QUEUE_TOPIC = "crontick-tick"
DEFAULT_QSTASH_URL = "https://qstash.upstash.io"
DEFAULT_GOOGLE_OIDC_ISSUER = "https://accounts.google.com"
DEFAULT_GOOGLE_OIDC_JWKS_URL = "https://www.googleapis.com/oauth2/v3/certs"


def waker(row: Variable, value: str) -> str:
    value = value.lower()
    if value not in WAKERS:
        raise ConfigError(f"{row.name}: expected one of {', '.join(WAKERS)}, got: {value!r}")
    return value


def http_url_base(row: Variable, value: str) -> str:
    """An http(s) base URL, without its trailing slash (paths are appended to it)."""
    return variables.http_url(row, value).rstrip("/")


@dataclass(frozen=True)
class WakeupSettings:
    """The wake-up rows of Settings (see the module docstring)."""

    # fmt: off
    waker: str = setting("CRONTICK_WAKER", WAKEUPS, "none", check=waker, doc="""`none`, `qstash`,
        `eventbridge`, `cloudtasks` or `vercel-queue`: the provider that books this app's next tick at the instant work
        comes due, so the scheduler can be a daily safety net (see [Precise wake-ups](wakeups.md)).""")
    wakeup_grace_seconds: float = setting("CRONTICK_WAKEUP_GRACE_SECONDS", WAKEUPS, DEFAULT_WAKEUP_GRACE_SECONDS,
        minimum=1, doc="With a waker set: how long due work may wait unpicked before `/api/health` reports `stale`.")
    wakeup_timeout_seconds: float = setting("CRONTICK_WAKEUP_TIMEOUT_SECONDS", WAKEUPS,
        DEFAULT_WAKEUP_TIMEOUT_SECONDS, minimum=0.1, maximum=30, doc="Each booking call's timeout; a booking that "
        "fails or times out never fails the tick (the next tick or the safety net books again).")
    qstash_token: str | None = setting("QSTASH_TOKEN", WAKEUPS, None, secret=True, doc="Upstash's token that "
        "publishes (`CRONTICK_WAKER=qstash`); the deliveries are verified with `QSTASH_CURRENT_SIGNING_KEY`.")
    qstash_url: str = setting("QSTASH_URL", WAKEUPS, DEFAULT_QSTASH_URL, check=http_url_base,
        doc="The QStash API's base URL (Upstash's own name; a regional URL, or a local stand-in in tests).")
    eventbridge_target_arn: str | None = setting("CRONTICK_EVENTBRIDGE_TARGET_ARN", WAKEUPS, None,
        doc="`CRONTICK_WAKER=eventbridge`: the ARN of the Lambda function the schedule invokes with "
        "`{\"crontick\": \"tick\"}`.")
    eventbridge_role_arn: str | None = setting("CRONTICK_EVENTBRIDGE_ROLE_ARN", WAKEUPS, None,
        doc="The IAM role EventBridge Scheduler assumes to invoke it (`lambda:InvokeFunction`).")
    eventbridge_group: str = setting("CRONTICK_EVENTBRIDGE_GROUP", WAKEUPS, "default",
        doc="The schedule group the one-time schedules are created in.")
    eventbridge_url: str | None = setting("CRONTICK_EVENTBRIDGE_URL", WAKEUPS, None, check=http_url_base,
        shown="`https://scheduler.<AWS_REGION>.amazonaws.com`", doc="The Scheduler API's endpoint (a local "
        "stand-in in tests).")
    aws_region: str | None = setting("AWS_REGION", WAKEUPS, None, doc="Set by AWS Lambda: the region of the "
        "Scheduler API and of the request signature.")
    aws_access_key_id: str | None = setting("AWS_ACCESS_KEY_ID", WAKEUPS, None, doc="Set by AWS Lambda (the "
        "function's role): signs the Scheduler calls (SigV4).")
    aws_secret_access_key: str | None = setting("AWS_SECRET_ACCESS_KEY", WAKEUPS, None, secret=True,
        doc="Set by AWS Lambda, with the key id.")
    aws_session_token: str | None = setting("AWS_SESSION_TOKEN", WAKEUPS, None, secret=True,
        doc="Set by AWS Lambda, with the key id.")
    cloudtasks_project: str | None = setting("CRONTICK_CLOUDTASKS_PROJECT", WAKEUPS, None,
        doc="`CRONTICK_WAKER=cloudtasks`: the Google Cloud project of the queue.")
    cloudtasks_location: str | None = setting("CRONTICK_CLOUDTASKS_LOCATION", WAKEUPS, None,
        doc="The queue's location, e.g. `europe-west1`.")
    cloudtasks_queue: str | None = setting("CRONTICK_CLOUDTASKS_QUEUE", WAKEUPS, None, doc="The queue's name.")
    cloudtasks_service_account: str | None = setting("CRONTICK_CLOUDTASKS_SERVICE_ACCOUNT", WAKEUPS, None,
        doc="The service account whose Google-signed OIDC token each task carries; allow it with "
        "`CRONTICK_GOOGLE_OIDC_EMAILS`.")
    cloudtasks_url: str = setting("CRONTICK_CLOUDTASKS_URL", WAKEUPS, "https://cloudtasks.googleapis.com",
        check=http_url_base, doc="The Cloud Tasks API's base URL (a local stand-in in tests).")
    gcp_metadata_url: str = setting("CRONTICK_GCP_METADATA_URL", WAKEUPS, "http://metadata.google.internal",
        check=http_url_base, doc="Where the access token for the Cloud Tasks API comes from (the "
        "metadata server of Cloud Run and every Google host).")
    vercel_queue_topic: str = setting("CRONTICK_VERCEL_QUEUE_TOPIC", WAKEUPS, DEFAULT_VERCEL_QUEUE_TOPIC,
        doc="`CRONTICK_WAKER=vercel-queue`: the topic whose subscriber runs the tick.")
    vercel_queue_token: str | None = setting("VERCEL_QUEUE_TOKEN", WAKEUPS, None, secret=True,
        shown="unset: `VERCEL_OIDC_TOKEN`", doc="The Queue API's token (the `vercel-queue` client's name); unset, "
        "the deployment's OIDC token.")
    vercel_oidc_token: str | None = setting("VERCEL_OIDC_TOKEN", WAKEUPS, None, secret=True,
        doc="Set by Vercel when OIDC is on: the Queue API's token when `VERCEL_QUEUE_TOKEN` is unset.")
    vercel_queue_base_url: str | None = setting("VERCEL_QUEUE_BASE_URL", WAKEUPS, None,
        check=http_url_base, shown="`https://<VERCEL_REGION>.vercel-queue.com`",
        doc="The Queue API's base URL (the `vercel-queue` client's name; a local stand-in in tests).")
    vercel_region: str = setting("VERCEL_REGION", WAKEUPS, "iad1", doc="Set by Vercel: the Queue API's region.")
    # Google's OIDC (crontick.auth.tick): Cloud Tasks (and Cloud Scheduler) call with a Google-signed ID token.
    google_oidc_emails: tuple[str, ...] = setting("CRONTICK_GOOGLE_OIDC_EMAILS", SCHEDULER_AUTH, (),
        doc="Comma-separated service-account emails. When set, a Google-signed OIDC token (Cloud Tasks, Cloud "
        "Scheduler) whose verified `email` is one of them authorises a tick; no stored secret.")
    google_oidc_audience: str | None = setting("CRONTICK_GOOGLE_OIDC_AUDIENCE", SCHEDULER_AUTH, None,
        doc="The audience those tokens carry (with `CRONTICK_WAKER=cloudtasks`, the tasks' too). Required with the "
        "emails.")
    google_oidc_issuer: str = setting("CRONTICK_GOOGLE_OIDC_ISSUER", SCHEDULER_AUTH, DEFAULT_GOOGLE_OIDC_ISSUER,
        check=variables.no_trailing_slash, doc="Google's issuer; change it only in tests.")
    google_oidc_jwks_url: str = setting("CRONTICK_GOOGLE_OIDC_JWKS_URL", SCHEDULER_AUTH,
        DEFAULT_GOOGLE_OIDC_JWKS_URL, check=variables.http_url, doc="Google's signing keys; change it only in tests.")
    # fmt: on

    @property
    def google_on(self) -> bool:
        """Google's OIDC authorises ticks (crontick.auth.tick.check_google_oidc)."""
        return bool(self.google_oidc_emails)


# What each waker cannot book without: (Settings field, its variable, what to put there).
WAKER_NEEDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "qstash": (
        ("public_url", "CRONTICK_PUBLIC_URL", "the base URL QStash calls, such as https://app.example.com"),
        ("qstash_token", "QSTASH_TOKEN", "the QStash token from the Upstash console"),
        ("qstash_current_signing_key", "QSTASH_CURRENT_SIGNING_KEY", "the signing key that verifies the deliveries"),
    ),
    "eventbridge": (
        ("aws_region", "AWS_REGION", "the region of the schedules (AWS Lambda sets it)"),
        ("eventbridge_target_arn", "CRONTICK_EVENTBRIDGE_TARGET_ARN", "the ARN of the Lambda function to invoke"),
        ("eventbridge_role_arn", "CRONTICK_EVENTBRIDGE_ROLE_ARN", "the ARN of the role the Scheduler assumes"),
        ("aws_access_key_id", "AWS_ACCESS_KEY_ID", "AWS credentials (AWS Lambda sets them)"),
        ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "AWS credentials (AWS Lambda sets them)"),
    ),
    "cloudtasks": (
        ("public_url", "CRONTICK_PUBLIC_URL", "the base URL Cloud Tasks calls, such as https://app.example.com"),
        ("cloudtasks_project", "CRONTICK_CLOUDTASKS_PROJECT", "the queue's Google Cloud project"),
        ("cloudtasks_location", "CRONTICK_CLOUDTASKS_LOCATION", "the queue's location, such as europe-west1"),
        ("cloudtasks_queue", "CRONTICK_CLOUDTASKS_QUEUE", "the queue's name"),
        ("cloudtasks_service_account", "CRONTICK_CLOUDTASKS_SERVICE_ACCOUNT", "the service account of the tokens"),
        ("google_oidc_emails", "CRONTICK_GOOGLE_OIDC_EMAILS", "that service account, so the tick accepts the calls"),
    ),
}


def check(s: Any) -> None:
    """The checks across the wake-up rows (a Settings): the first variable missing fails startup, named."""
    if s.google_oidc_emails and not s.google_oidc_audience:
        raise ConfigError(
            "CRONTICK_GOOGLE_OIDC_AUDIENCE: expected the audience the tokens carry (the task's oidcToken.audience) "
            "because CRONTICK_GOOGLE_OIDC_EMAILS is set, got: nothing"
        )
    for name, variable, expected in WAKER_NEEDS.get(s.waker, ()):
        if not getattr(s, name):
            raise ConfigError(f"{variable}: expected {expected} because CRONTICK_WAKER={s.waker}, got: nothing")
    if s.waker == "vercel-queue" and not (s.vercel_queue_token or s.vercel_oidc_token):
        raise ConfigError(
            "VERCEL_QUEUE_TOKEN: expected a Queue API token, or Vercel's OIDC on (VERCEL_OIDC_TOKEN), because "
            "CRONTICK_WAKER=vercel-queue, got: neither"
        )
