"""Fixtures for the auth tests: a local OIDC issuer with its own RSA key (see issuers.py)."""

from __future__ import annotations

from tests.auth.client import crontick_log  # noqa: F401 (fixture)
from tests.auth.issuers import issuer, other_rsa_key, rsa_key  # noqa: F401 (fixtures)
