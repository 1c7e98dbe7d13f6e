"""AWS Signature Version 4 for one request, by hand with hmac and hashlib as AWS documents it
(docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html), so the tick never imports
botocore. tests/wakers/test_sigv4.py holds it to botocore's own signer for fixed requests."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime
from urllib.parse import parse_qsl, quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


class Credentials:
    __slots__ = ("key_id", "secret", "token")

    def __init__(self, key_id: str, secret: str, token: str | None = None) -> None:
        self.key_id, self.secret, self.token = key_id, secret, token


def signed_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    region: str,
    service: str,
    credentials: Credentials,
    now: datetime,
) -> dict[str, str]:
    """`headers` plus Host, X-Amz-Date, X-Amz-Security-Token (with a session token) and Authorization."""
    parts = urlsplit(url)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    out = {**headers, "Host": parts.netloc, "X-Amz-Date": stamp}
    if credentials.token:
        out["X-Amz-Security-Token"] = credentials.token
    lowered = sorted((name.lower(), " ".join(value.split())) for name, value in out.items())
    names = ";".join(name for name, _ in lowered)
    canonical = "\n".join([
        method.upper(),
        quote(parts.path or "/", safe="/~"),
        _canonical_query(parts.query),
        "".join(f"{name}:{value}\n" for name, value in lowered),
        names,
        hashlib.sha256(body).hexdigest(),
    ])  # fmt: skip
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _signing_key(credentials.secret, stamp[:8], region, service)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.key_id}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return out


def _canonical_query(query: str) -> str:
    pairs = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in parse_qsl(query, keep_blank_values=True))
    return "&".join(f"{k}={v}" for k, v in pairs)


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key
