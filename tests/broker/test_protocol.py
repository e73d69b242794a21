"""Framing, headers and the public codec entry points of broker.protocol (pure unit tests, no sockets)."""

from __future__ import annotations

import struct

import pytest

from broker.protocol import (
    SUPPORTED,
    ApiKey,
    CorruptRequest,
    ErrorCode,
    FrameDecoder,
    FrameTooLarge,
    RequestHeader,
    UnknownApi,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_response,
    is_flexible,
    parse_request_header,
)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# ------------------------------------------------------------------------------------------------ framing


def test_frames_split_byte_by_byte() -> None:
    wire = _frame(b"hello") + _frame(b"") + _frame(b"world!")
    dec = FrameDecoder(100)
    out: list[bytes] = []
    for i in range(len(wire)):
        out += dec.feed(wire[i : i + 1])
    assert out == [b"hello", b"", b"world!"]
    assert dec.buffered == 0


def test_several_frames_in_one_feed_and_a_partial_tail() -> None:
    dec = FrameDecoder(100)
    wire = _frame(b"a") + _frame(b"bb") + _frame(b"ccc")
    assert dec.feed(wire + b"\x00\x00") == [b"a", b"bb", b"ccc"]
    assert dec.buffered == 2
    assert dec.feed(b"\x00\x01z") == [b"z"]
    assert dec.buffered == 0


def test_oversized_prefix_is_refused_as_soon_as_read() -> None:
    dec = FrameDecoder(10)
    with pytest.raises(FrameTooLarge) as exc:
        dec.feed(struct.pack(">i", 11))
    assert exc.value.size == 11
    assert "larger than 10" in str(exc.value)


def test_negative_prefix_is_refused() -> None:
    with pytest.raises(FrameTooLarge, match="size = -1"):
        FrameDecoder(10).feed(b"\xff\xff\xff\xff")


def test_frame_of_exactly_max_size_is_accepted() -> None:
    assert FrameDecoder(3).feed(_frame(b"abc")) == [b"abc"]


# ------------------------------------------------------------------------------------------------ headers


def test_request_header_v1_and_v2_client_id_is_int16_even_when_flexible() -> None:
    wire = encode_request(ApiKey.METADATA, 9, 42, "cli", {"topics": None})
    frame = wire[4:]
    assert frame[8:10] == b"\x00\x03"  # int16 length, not compact
    assert frame[13:14] == b"\x00"  # header v2 tagged-field count
    assert parse_request_header(frame) == RequestHeader(3, 9, 42, "cli")


def test_null_client_id() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 5, None, {"topics": None})[4:]
    assert frame[8:10] == b"\xff\xff"
    assert parse_request_header(frame).client_id is None


def test_controlled_shutdown_v0_uses_header_v0() -> None:
    frame = encode_request(ApiKey.CONTROLLED_SHUTDOWN, 0, 9, "ignored", {"broker_id": 3})[4:]
    assert frame == struct.pack(">hhii", 7, 0, 9, 3)
    header, body = decode_request(frame)
    assert header == RequestHeader(7, 0, 9, None)
    assert body == {"broker_id": 3}


def test_header_str_is_kafkas() -> None:
    h = RequestHeader(4, 2, 44, "1")
    assert str(h) == "RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=2, clientId=1, correlationId=44)"


@pytest.mark.parametrize(
    "frame",
    [b"", b"\x00\x03", b"\x00\x03\x00\x01\x00\x00\x00", b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x09ab"],
)
def test_truncated_header_is_corrupt(frame: bytes) -> None:
    with pytest.raises(CorruptRequest):
        parse_request_header(frame)


def test_bad_utf8_client_id_is_corrupt() -> None:
    with pytest.raises(CorruptRequest):
        parse_request_header(struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe")


# ------------------------------------------------------------------------------------------------ dispatch


def test_unknown_api_and_unsupported_version_carry_the_header() -> None:
    with pytest.raises(UnknownApi) as e1:
        decode_request(struct.pack(">hhih", 999, 0, 3, -1))
    assert e1.value.header.correlation_id == 3
    with pytest.raises(UnsupportedVersion) as e2:
        decode_request(struct.pack(">hhih", 3, 99, 4, -1) + b"\x00")
    assert e2.value.header.api_version == 99
    assert e2.value.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_trailing_garbage_after_body_is_corrupt() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 1, "c", {"topics": None})[4:]
    with pytest.raises(CorruptRequest):
        decode_request(frame + b"\x00")


def test_is_flexible() -> None:
    assert is_flexible(ApiKey.LEADER_AND_ISR, 4)
    assert not is_flexible(ApiKey.LEADER_AND_ISR, 3)
    assert is_flexible(ApiKey.UPDATE_METADATA, 6)
    assert not is_flexible(ApiKey.UPDATE_METADATA, 5)
    assert is_flexible(ApiKey.STOP_REPLICA, 2)
    assert not is_flexible(ApiKey.STOP_REPLICA, 1)
    assert is_flexible(ApiKey.API_VERSIONS, 3)
    assert not is_flexible(999, 0)


def test_supported_ranges_cover_the_required_versions() -> None:
    for key, (lo, hi) in {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.METADATA: (0, 12),
        ApiKey.LEADER_AND_ISR: (0, 7),
        ApiKey.UPDATE_METADATA: (0, 8),
        ApiKey.STOP_REPLICA: (0, 4),
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 12),
        ApiKey.LIST_OFFSETS: (1, 7),
    }.items():
        assert SUPPORTED[key][0] <= lo
        assert SUPPORTED[key][1] >= hi


# ------------------------------------------------------------------------------------------------ responses


def test_api_versions_response_header_is_always_v0() -> None:
    h = RequestHeader(ApiKey.API_VERSIONS, 3, 77, "c")
    wire = encode_response(h, {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]})
    assert wire[4:8] == struct.pack(">i", 77)
    assert wire[8:10] == b"\x00\x00"  # error code right after the correlation id: no header tag section
    corr, body = decode_response(ApiKey.API_VERSIONS, 3, wire[4:])
    assert corr == 77
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 3}]


def test_flexible_response_has_header_v1() -> None:
    h = RequestHeader(ApiKey.METADATA, 9, 5, "c")
    wire = encode_response(h, {})
    assert wire[4:9] == struct.pack(">i", 5) + b"\x00"
    assert struct.unpack(">i", wire[:4])[0] == len(wire) - 4


def test_api_versions_unsupported_version_falls_back_to_v0_kip511() -> None:
    wire = error_response(RequestHeader(ApiKey.API_VERSIONS, 9, 12, "c"), ErrorCode.UNSUPPORTED_VERSION)
    assert wire is not None
    corr, body = decode_response(ApiKey.API_VERSIONS, 0, wire[4:])
    assert corr == 12
    assert body == {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": SUPPORTED[18][1]}],
    }


def test_error_response_unknown_api_is_none() -> None:
    assert error_response(RequestHeader(999, 0, 1, None), ErrorCode.INVALID_REQUEST) is None
