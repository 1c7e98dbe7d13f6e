"""The registry: one provider per CRONTICK_WAKER value with its horizon and granularity, and no provider module
(nor book_next) pulls boto3, botocore, a Google library or vercel-queue onto the tick's import path."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

from crontick.settings import Settings
from crontick.settings.wakeups import WAKERS
from crontick.wakers import registry

BUILT = {
    "qstash": Settings(waker="qstash", public_url="https://a.example", qstash_token="t"),
    "eventbridge": Settings(
        waker="eventbridge",
        aws_region="eu-west-1",
        eventbridge_target_arn="arn:t",
        eventbridge_role_arn="arn:r",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    ),  # fmt: skip
    "cloudtasks": Settings(
        waker="cloudtasks",
        public_url="https://a.example",
        cloudtasks_project="p",
        cloudtasks_location="l",
        cloudtasks_queue="q",
        cloudtasks_service_account="a@p",
    ),  # fmt: skip
    "vercel-queue": Settings(waker="vercel-queue", vercel_queue_token="t"),
}


def test_every_waker_has_a_provider_with_its_limits() -> None:
    assert set(registry.MODULES) == set(WAKERS) - {"none"} == set(BUILT)
    limits = {}
    for name, settings in BUILT.items():
        provider = registry.provider_for(settings)
        assert provider is not None and provider.name == name
        limits[name] = (provider.horizon, provider.granularity_seconds)
    assert limits == {
        "qstash": (timedelta(days=7), 1),
        "eventbridge": (timedelta(days=365), 60),
        "cloudtasks": (timedelta(days=30), 1),
        "vercel-queue": (timedelta(hours=23), 1),
    }
    assert registry.provider_for(Settings()) is None


def test_no_heavy_import_on_the_tick_path() -> None:
    code = (
        "import sys, crontick.wakers.booking\n"
        "for m in ('qstash', 'eventbridge', 'cloudtasks', 'vercel_queue'): __import__('crontick.wakers.' + m)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'boto3', 'botocore', 'google', 'vercel', 'grpc'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
