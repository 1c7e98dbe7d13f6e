"""Decompression bombs and odd answers, as a hostile receiver would send them (built once per process)."""

from __future__ import annotations

import functools
import gzip

from werkzeug import Response

EXPANDED_BYTES = 64 * 1024 * 1024  # what each bomb becomes once decoded in full


@functools.cache
def stacked_gzip() -> bytes:
    """64 MiB of zeros, gzipped twice: about 270 bytes on the wire, sent as `Content-Encoding: gzip, gzip`."""
    return gzip.compress(gzip.compress(bytes(EXPANDED_BYTES), 9, mtime=0), 9, mtime=0)


@functools.cache
def single_gzip() -> bytes:
    """64 MiB of zeros, gzipped once: about 64 KB on the wire, sent as `Content-Encoding: gzip`."""
    return gzip.compress(bytes(EXPANDED_BYTES), 9, mtime=0)


def stacked_bomb(status: int = 500) -> Response:
    return Response(stacked_gzip(), status, headers={"Content-Encoding": "gzip, gzip"})


def single_bomb(status: int = 500) -> Response:
    return Response(single_gzip(), status, headers={"Content-Encoding": "gzip"})


def nul_bytes(status: int = 500, count: int = 100) -> Response:
    """A plain body of NUL bytes (no compression needed): PostgreSQL text cannot hold one."""
    return Response(b"\x00" * count, status, content_type="text/plain")
