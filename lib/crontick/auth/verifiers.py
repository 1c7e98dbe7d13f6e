"""Inbound webhook signature checks: pure functions over the raw request bytes, one per provider."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit, urlunsplit

from crontick.errors import Refused
from crontick.settings import webhook_signing_key

STRIPE_TOLERANCE_SECONDS = 300
STANDARD_TOLERANCE_SECONDS = 300
TWILIO_ALGORITHMS: dict[str, Any] = {"HMAC_SHA1": hashlib.sha1, "HMAC_SHA256": hashlib.sha256}
# A form is split before its signature can be checked (Twilio signs the fields), so an
# unauthenticated sender decides how much work the split costs: a Twilio message has about 40.
MAX_FORM_FIELDS = 1000
# The headers each verifier needs, looked at before a byte of the body is read: a request
# without them is refused for the price of a header lookup.
SIGNATURE_HEADERS: dict[str, tuple[str, ...]] = {
    "twilio": ("X-Twilio-Signature",),
    "stripe": ("Stripe-Signature",),
    "github": ("X-Hub-Signature-256",),
    "standard": ("webhook-id", "webhook-timestamp", "webhook-signature"),
    "bearer": ("Authorization",),
}


def signature_headers_present(verify: str, headers: Mapping[str, str]) -> None:
    """Refused unless every header the verifier reads is there (`headers` looks names up case-insensitively)."""
    for name in SIGNATURE_HEADERS[verify]:
        if not headers.get(name.lower()):
            raise Refused(f"no {name} header")


def form_fields(body: bytes) -> dict[str, list[str]]:
    """application/x-www-form-urlencoded fields, each name with all its values in order (at most MAX_FORM_FIELDS)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("expected a UTF-8 form body, got bytes that do not decode") from None
    try:
        return parse_qs(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # counted before anything is split
        raise Refused(f"expected at most {MAX_FORM_FIELDS} form fields, got more") from None


def twilio_signed_text(url: str, fields: Mapping[str, Sequence[str]]) -> str:
    """What Twilio signs, with the URL as given: the URL, then each name+value, sorted by name and then value."""
    return url + "".join(name + value for name in sorted(fields) for value in sorted(set(fields[name])))


def twilio_event_key(url: str, fields: Mapping[str, Sequence[str]]) -> str:
    """`sha256:<hex>` of what Twilio signed (the URL without its default port): the same request, the same key.

    For Twilio requests that carry no MessageSid or CallSid; the I-Twilio-Idempotency-Token
    header is not signed, so a replay could choose it.
    """
    text = twilio_signed_text(_without_port(urlsplit(url)), fields)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def twilio(
    token: str,
    url: str,
    fields: Mapping[str, Sequence[str]],
    signature: str | None,
    body: bytes,
    *,
    settings_header: str | None = None,
) -> None:
    """X-Twilio-Signature = base64(HMAC(token, url + name+value for each sorted name and sorted value)).

    As Twilio's own validator does: the URL is tried with and without its default port, a
    repeated name contributes each distinct value, and a JSON body is signed through the URL's
    `bodySHA256` (hex SHA-256 of the raw body) with no form fields. The hash is SHA-1 unless
    X-Twilio-Webhooks-Signature-Settings names HMAC_SHA256.
    """
    if not signature:
        raise Refused("no X-Twilio-Signature header")
    algorithm = _twilio_algorithm(settings_header)
    parts = urlsplit(url)
    body_hash = parse_qs(parts.query).get("bodySHA256")
    if body_hash is not None:
        if not hmac.compare_digest(hashlib.sha256(body).hexdigest().encode(), body_hash[0].lower().encode()):
            raise Refused("expected bodySHA256 = hex SHA-256 of the raw body, got a different hash")
        fields = {}
    for candidate in {_with_port(parts), _without_port(parts)}:
        mac = hmac.new(token.encode(), twilio_signed_text(candidate, fields).encode(), algorithm).digest()
        if hmac.compare_digest(base64.b64encode(mac), signature.strip().encode()):
            return
    raise Refused(f"signature does not match {_without_port(parts)!r} (with or without its port) and the form fields")


def _twilio_algorithm(header: str | None) -> Any:
    for part in (header or "").split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip() == "algorithm" and value.strip():
            found = TWILIO_ALGORITHMS.get(value.strip().upper())
            if found is None:
                raise Refused(f"expected algorithm HMAC_SHA1 or HMAC_SHA256, got: {value.strip()[:40]!r}")
            return found
    return hashlib.sha1


def _with_port(parts: SplitResult) -> str:
    if parts.port:
        return urlunsplit(parts)
    port = 443 if parts.scheme == "https" else 80
    return urlunsplit(parts._replace(netloc=f"{parts.netloc}:{port}"))


def _without_port(parts: SplitResult) -> str:
    if not parts.port:
        return urlunsplit(parts)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit(":", 1)[0]))


def stripe(secret: str, header: str | None, body: bytes, now: float, tolerance: int = STRIPE_TOLERANCE_SECONDS) -> None:
    """Stripe-Signature `t=<unix>,v1=<hex>[,v1=…]`: hex HMAC-SHA256(secret, "{t}.{body}"), t within tolerance."""
    if not header:
        raise Refused("no Stripe-Signature header")
    pairs = [item.split("=", 1) for item in header.split(",") if "=" in item]
    stamps = [v.strip() for k, v in pairs if k.strip() == "t"]
    signatures = [v.strip().encode() for k, v in pairs if k.strip() == "v1"]
    if len(stamps) != 1 or not stamps[0].isdigit():
        raise Refused("expected one numeric t= in Stripe-Signature")
    if not signatures:
        raise Refused("expected at least one v1= signature in Stripe-Signature")
    expected = hmac.new(secret.encode(), stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest().encode()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise Refused("no v1 signature matches the body and the webhook secret")
    _fresh(int(stamps[0]), now, tolerance)


def github(secret: str, header: str | None, body: bytes) -> None:
    """X-Hub-Signature-256 `sha256=<hex>`: hex HMAC-SHA256(secret, body)."""
    if not header or not header.startswith("sha256="):
        raise Refused("no X-Hub-Signature-256 header of the form sha256=<hex>")
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), header.strip().encode()):
        raise Refused("signature does not match the body and the webhook secret")


def standard(
    secret: str,
    msg_id: str | None,
    timestamp: str | None,
    header: str | None,
    body: bytes,
    now: float,
    tolerance: int = STANDARD_TOLERANCE_SECONDS,
) -> None:
    """Standard Webhooks: base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}"); `v1,<sig>` entries, space-separated."""
    if not msg_id or not timestamp or not header:
        raise Refused("expected webhook-id, webhook-timestamp and webhook-signature headers")
    if not timestamp.isdigit():
        raise Refused("expected a numeric webhook-timestamp")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(webhook_signing_key(secret), signed, hashlib.sha256).digest())
    candidates = [entry.partition(",")[2].encode() for entry in header.split() if entry.startswith("v1,")]
    if not any(hmac.compare_digest(expected, c) for c in candidates):
        raise Refused("no v1 signature matches the body and the webhook secret")
    _fresh(int(timestamp), now, tolerance)


def bearer(secret: str, authorization: str | None) -> None:
    """A static `Authorization: Bearer <secret>`, for senders that sign nothing."""
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Refused("no Authorization: Bearer header")
    if not hmac.compare_digest(value.strip().encode(), secret.encode()):
        raise Refused("bearer token does not match")


def _fresh(timestamp: int, now: float, tolerance: int) -> None:
    if abs(now - timestamp) > tolerance:
        raise Refused(f"expected a timestamp within {tolerance} s of now, got one {int(now - timestamp)} s off")
