"""Helpers that more than one test folder uses (and bench/ reuses); fixtures live in tests/conftest.py."""
