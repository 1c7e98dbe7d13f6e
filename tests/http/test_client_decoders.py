"""crontick.http.client's bounded decoders for Content-Encoding: one layer of gzip or deflate, within the room given."""

from __future__ import annotations

import gzip
import zlib

import pytest

from crontick.http.client import Inflater, Undecodable, inflater_for


@pytest.mark.parametrize(
    "codings",
    [
        ["gzip", "gzip"],
        ["gzip", "deflate"],
        ["br"],
        ["zstd"],
        ["compress"],
        ["x-bomb"],
        ["deflate", "identity", "gzip"],
    ],
)
def test_encodings_without_a_bounded_decoder_are_refused(codings: list[str]) -> None:
    with pytest.raises(Undecodable, match="one layer of gzip or deflate"):
        inflater_for(codings)


@pytest.mark.parametrize("codings", [[], [""], ["identity"], [" Identity ", "identity"]])
def test_no_encoding_needs_no_decoder(codings: list[str]) -> None:
    assert inflater_for(codings) is None


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("coding", "encoded"),
    [
        ("gzip", gzip.compress(b'{"id": "re_1"}', mtime=0)),
        ("x-gzip", gzip.compress(b'{"id": "re_1"}', mtime=0)),
        ("deflate", zlib.compress(b'{"id": "re_1"}')),  # the zlib format RFC 9110 means
        ("deflate", _raw_deflate(b'{"id": "re_1"}')),  # raw deflate, as some servers send it
    ],
)
def test_one_layer_decodes(coding: str, encoded: bytes) -> None:
    inflater = inflater_for([coding.upper()])
    assert inflater is not None
    assert inflater.feed(encoded[:5], 1000) + inflater.feed(encoded[5:], 1000) == b'{"id": "re_1"}'
    assert inflater.done


def test_a_bomb_decodes_to_no_more_than_the_room_given() -> None:
    bomb = gzip.compress(bytes(16 * 1024 * 1024), 9)
    inflater = Inflater("gzip")
    assert inflater.feed(bomb, 65536) == bytes(65536)
    assert inflater.feed(bomb[:10], 0) == b""  # no room: nothing decoded (max_length 0 would mean unlimited)


def test_bytes_that_are_not_what_the_encoding_says_are_refused() -> None:
    with pytest.raises(Undecodable, match="expected a gzip body, got bytes zlib cannot decode"):
        Inflater("gzip").feed(b"this is not gzip at all", 1000)
