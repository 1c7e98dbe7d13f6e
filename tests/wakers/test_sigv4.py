"""crontick's hand-written SigV4 gives botocore's own signature for the same request and instant (botocore is a
dev dependency only: the tick never imports it)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from crontick.wakers import sigv4

BODY = b'{"ScheduleExpression":"at(2026-12-05T09:31:00)","Target":{"Input":"{\\"crontick\\": \\"tick\\"}"}}'


@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzEJr//////////wEaDOEXAMPLETOKEN"])
@pytest.mark.parametrize(
    "url",
    [
        "https://scheduler.eu-west-1.amazonaws.com/schedules/crontick-0a1b2c3d4e5f-20261205T093100Z",
        "http://127.0.0.1:4566/schedules/x_y.z-1?groupName=default&b=a%20b",
    ],
)
def test_the_signature_is_botocores(url: str, token: str | None) -> None:
    boto = AWSRequest(method="POST", url=url, data=BODY, headers={"Content-Type": "application/json"})
    SigV4Auth(BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token),
              "scheduler", "eu-west-1").add_auth(boto)  # fmt: skip
    instant = datetime.strptime(boto.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    ours = sigv4.signed_headers(
        "POST", url, {"Content-Type": "application/json"}, BODY, region="eu-west-1", service="scheduler",
        credentials=sigv4.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token), now=instant,
    )  # fmt: skip
    assert ours["Authorization"] == boto.headers["Authorization"]
    assert ours.get("X-Amz-Security-Token") == boto.headers.get("X-Amz-Security-Token")


def test_a_different_body_changes_the_signature() -> None:
    creds = sigv4.Credentials("AKIDEXAMPLE", "secret")
    now = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    url = "https://scheduler.eu-west-1.amazonaws.com/schedules/a"
    one = sigv4.signed_headers("POST", url, {}, b"{}", region="eu-west-1", service="scheduler", credentials=creds,
                               now=now)  # fmt: skip
    two = sigv4.signed_headers("POST", url, {}, b"{ }", region="eu-west-1", service="scheduler", credentials=creds,
                               now=now)  # fmt: skip
    assert one["Authorization"] != two["Authorization"]
