"""Each inbound verifier against the sender's own library (twilio, stripe, standardwebhooks) and GitHub's test vector."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest
import standardwebhooks
import stripe
from twilio.request_validator import RequestValidator

from crontick.auth import verifiers

TOKEN = "12345678901234567890123456789012"
URL = "https://app.example.com/api/hooks/whatsapp"
NOW = 1_800_000_000.0


class MultiDict(dict[str, list[str]]):
    """What Twilio's validator reads repeated names from (it calls getlist)."""

    def getlist(self, name: str) -> list[str]:
        return self[name]


FORM = MultiDict(
    {"MessageSid": ["SM1"], "Body": ["hello"], "From": ["whatsapp:+31612345678"], "MediaUrl": ["b", "a", "a"]}
)


def form_body(fields: dict[str, list[str]]) -> bytes:
    return urlencode([(k, v) for k, vs in fields.items() for v in vs]).encode()


def twilio_accepts(
    url: str, fields: dict[str, list[str]], sig: str, body: bytes, token: str = TOKEN, **kw: Any
) -> bool:
    try:
        verifiers.twilio(token, url, fields, sig, body, **kw)
    except verifiers.Refused:
        return False
    return True


def test_twilio_accepts_what_twilio_signs_including_repeated_names() -> None:
    sig = RequestValidator(TOKEN).compute_signature(URL, FORM)
    body = form_body(FORM)
    assert RequestValidator(TOKEN).validate(URL, FORM, sig)
    assert twilio_accepts(URL, verifiers.form_fields(body), sig, body)


def test_twilio_refuses_a_tampered_body_and_a_wrong_token() -> None:
    sig = RequestValidator(TOKEN).compute_signature(URL, FORM)
    tampered = MultiDict({**FORM, "Body": ["hullo"]})
    assert not RequestValidator(TOKEN).validate(URL, tampered, sig)
    assert not twilio_accepts(URL, tampered, sig, form_body(tampered))
    assert not twilio_accepts(URL, FORM, sig, form_body(FORM), token="x" * 32)
    assert not twilio_accepts(URL, FORM, "", form_body(FORM))
    assert not twilio_accepts(URL + "?x=1", FORM, sig, form_body(FORM))  # the query is signed too


@pytest.mark.parametrize(
    ("signed_url", "received_url"),
    [
        ("https://app.example.com:443/api/hooks/whatsapp", URL),
        (URL, "https://app.example.com:443/api/hooks/whatsapp"),
        ("http://app.example.com:80/api/hooks/whatsapp?a=1", "http://app.example.com/api/hooks/whatsapp?a=1"),
    ],
    ids=["port-signed", "port-received", "http-port"],
)
def test_twilio_tries_the_url_with_and_without_the_port(signed_url: str, received_url: str) -> None:
    sig = RequestValidator(TOKEN).compute_signature(signed_url, FORM)
    assert RequestValidator(TOKEN).validate(received_url, FORM, sig)
    assert twilio_accepts(received_url, FORM, sig, form_body(FORM))


def test_twilio_json_body_is_signed_through_body_sha256() -> None:
    import hashlib

    body = json.dumps({"MessageSid": "SM9", "Body": "hi"}).encode()
    url = URL + "?bodySHA256=" + hashlib.sha256(body).hexdigest()
    sig = RequestValidator(TOKEN).compute_signature(url, {})
    assert RequestValidator(TOKEN).validate(url, body.decode(), sig)
    assert twilio_accepts(url, {}, sig, body)
    assert not RequestValidator(TOKEN).validate(url, body.decode() + " ", sig)
    assert not twilio_accepts(url, {}, sig, body + b" ")


def test_twilio_hmac_sha256_when_the_settings_header_names_it() -> None:
    sig = RequestValidator(TOKEN).compute_signature(URL, FORM, "HMAC_SHA256")
    header = "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256"
    assert twilio_accepts(URL, FORM, sig, form_body(FORM), settings_header=header)
    assert not twilio_accepts(URL, FORM, sig, form_body(FORM))  # read as SHA-1 it does not match
    assert not twilio_accepts(URL, FORM, sig, form_body(FORM), settings_header="algorithm=MD5")


STRIPE_SECRET = "whsec_test_secret_for_crontick"
STRIPE_BODY = json.dumps({"id": "evt_1", "type": "invoice.paid", "object": "event"})


def stripe_accepts(header: str, body: str, secret: str = STRIPE_SECRET, now: float = NOW) -> bool:
    try:
        verifiers.stripe(secret, header, body.encode(), now)
    except verifiers.Refused:
        return False
    return True


def stripe_lib_accepts(header: str, body: str, secret: str = STRIPE_SECRET, now: float = NOW) -> bool:
    real_time = time.time
    time.time = lambda: now  # type: ignore[assignment]  # stripe reads the wall clock for its tolerance
    try:
        stripe.Webhook.construct_event(body, header, secret, tolerance=300)
    except stripe.SignatureVerificationError:
        return False
    finally:
        time.time = real_time  # type: ignore[assignment]
    return True


@pytest.mark.parametrize(
    ("case", "make"),
    [
        (
            "valid",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, STRIPE_SECRET, int(NOW)),
                STRIPE_BODY,
                STRIPE_SECRET,
                True,
            ),
        ),
        (
            "tampered",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, STRIPE_SECRET, int(NOW)),
                STRIPE_BODY + " ",
                STRIPE_SECRET,
                False,
            ),
        ),
        (
            "wrong-secret",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, "whsec_other", int(NOW)),
                STRIPE_BODY,
                STRIPE_SECRET,
                False,
            ),
        ),
        (
            "stale",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, STRIPE_SECRET, int(NOW) - 301),
                STRIPE_BODY,
                STRIPE_SECRET,
                False,
            ),
        ),
        (
            "just-in-time",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, STRIPE_SECRET, int(NOW) - 299),
                STRIPE_BODY,
                STRIPE_SECRET,
                True,
            ),
        ),
        (
            "rotated",
            lambda: (
                stripe.WebhookSignature.generate_signature_header(STRIPE_BODY, STRIPE_SECRET, int(NOW)).replace(
                    ",v1=", ",v1=00ff,v1="
                ),
                STRIPE_BODY,
                STRIPE_SECRET,
                True,
            ),
        ),
    ],
)
def test_stripe_agrees_with_stripe(case: str, make: Callable[[], tuple[str, str, str, bool]]) -> None:
    header, body, secret, expected = make()
    assert stripe_lib_accepts(header, body, secret) is expected
    assert stripe_accepts(header, body, secret) is expected


def test_github_published_test_vector() -> None:
    secret, body = "It's a Secret to Everybody", b"Hello, World!"
    good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    verifiers.github(secret, good, body)
    for header, data, key in (
        (good, b"Hello, World?", secret),
        (good, body, "wrong"),
        (good.replace("sha256", "sha1"), body, secret),
        (None, body, secret),
    ):
        with pytest.raises(verifiers.Refused):
            verifiers.github(key, header, data)


SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def sw_headers(secret: str, msg_id: str, at: float, body: str) -> dict[str, str]:
    sig = standardwebhooks.Webhook(secret).sign(msg_id, datetime.fromtimestamp(at, UTC), body)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(at)), "webhook-signature": sig}


def sw_accepts(h: dict[str, str], body: str, now: float) -> bool:
    try:
        verifiers.standard(
            SW_SECRET, h["webhook-id"], h["webhook-timestamp"], h["webhook-signature"], body.encode(), now
        )
    except verifiers.Refused:
        return False
    return True


def sw_lib_accepts(h: dict[str, str], body: str) -> bool:
    try:
        standardwebhooks.Webhook(SW_SECRET).verify(body, h)
    except standardwebhooks.webhooks.WebhookVerificationError:
        return False
    return True


def test_standard_webhooks_agrees_with_standardwebhooks() -> None:
    now, body = time.time(), '{"type":"user.created"}'
    valid = sw_headers(SW_SECRET, "msg_1", now, body)
    other_key = sw_headers("whsec_" + "QUJDREVGR0hJSktMTU5PUA==", "msg_1", now, body)
    stale = sw_headers(SW_SECRET, "msg_1", now - 301, body)
    rotated = {**valid, "webhook-signature": other_key["webhook-signature"] + " " + valid["webhook-signature"]}
    cases = [
        (valid, body, True),
        (valid, body + " ", False),
        (other_key, body, False),
        (stale, body, False),
        (rotated, body, True),
        ({**valid, "webhook-id": "msg_2"}, body, False),
    ]
    for headers, data, expected in cases:
        assert sw_lib_accepts(headers, data) is expected
        assert sw_accepts(headers, data, now) is expected


def test_bearer() -> None:
    verifiers.bearer("s" * 32, "Bearer " + "s" * 32)
    for header in (None, "Bearer " + "t" * 32, "Basic " + "s" * 32, "Bearer "):
        with pytest.raises(verifiers.Refused):
            verifiers.bearer("s" * 32, header)


def test_form_fields_keep_repeated_names_and_blank_values() -> None:
    assert verifiers.form_fields(b"a=1&a=2&b=&c=%C3%A9") == {"a": ["1", "2"], "b": [""], "c": ["é"]}
