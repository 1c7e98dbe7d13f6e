"""The security tests reuse the auth tests' local OIDC issuer and log recorder."""

from __future__ import annotations

from tests.auth.client import crontick_log  # noqa: F401 (fixture)
from tests.auth.issuers import issuer, other_rsa_key, rsa_key  # noqa: F401 (fixtures)
