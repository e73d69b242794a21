"""Property tests of the wire decoder: whatever the bytes, only the protocol's own errors, in bounded time and memory;
and what the codec encodes, it decodes to the same value.

Valid frames come from the codec's own encoder over bodies drawn from the schema tables (tests/fuzz/strategies.py),
for every API and every version the broker supports; mutations then flip, cut, extend, repeat and overwrite lengths.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol import (
    REGISTRY,
    SUPPORTED,
    FrameDecoder,
    FrameTooLarge,
    ProtocolError,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    parse_request_header,
    request_header_version,
)
from broker.protocol.codec import message_codec, value_codec
from broker.protocol.headers import encode_request_header
from broker.protocol.schema import Field
from broker.protocol.varint import VarintError, read_uvarint, read_varint, write_uvarint, write_varint
from tests.fuzz.budget import examples
from tests.fuzz.strategies import body_of, mutated

pytestmark = pytest.mark.fuzz

API_KEYS = sorted(SUPPORTED)
_IDS = [REGISTRY[k][0].name.removesuffix("Request") for k in API_KEYS]
# Memory a decode may take: a fixed allowance plus this many bytes per input byte. Legitimately ~100 (1,024 small
# distinct structs of a few bytes each are 1,024 dicts); an array count believed before its bytes are there costs
# gigabytes, far above.
_PEAK_BASE = 1 << 20
_PEAK_PER_BYTE = 256
client_ids = st.one_of(st.none(), st.text(max_size=8))


@contextmanager
def bounded_memory(size: int) -> Iterator[None]:
    """Fail when the block's peak of traced allocations exceeds the allowance for an input of ``size`` bytes."""
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= _PEAK_BASE + _PEAK_PER_BYTE * size, f"{peak} bytes allocated to decode {size} bytes"


def only_protocol_errors(decode: Callable[[], Any]) -> Any:
    """Run ``decode``; a ProtocolError is an answer, anything else escapes and fails the test. A MemoryError must
    not be the cause either: the decoder refuses a length before it allocates for it."""
    try:
        return decode()
    except ProtocolError as exc:
        refused = str(exc)
    assert "MemoryError" not in refused, refused
    return None


@st.composite
def request_frames(draw: st.DrawFn, api_key: int) -> bytes:
    """A valid request frame (without its size prefix) of ``api_key`` in a supported version."""
    lo, hi = SUPPORTED[api_key]
    version = draw(st.integers(lo, hi))
    body = draw(body_of(REGISTRY[api_key][0], version))
    return encode_request(api_key, version, draw(st.integers(-(2**31), 2**31 - 1)), draw(client_ids), body)[4:]


# ----------------------------------------------------------------------------------------------- requests
@pytest.mark.parametrize("api_key", API_KEYS, ids=_IDS)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_mutated_requests_raise_only_protocol_errors_within_bounds(api_key: int, data: st.DataObject) -> None:
    frame = data.draw(request_frames(api_key))
    # the header's api key and version stay (6 bytes 1 in 2 times), so most mutations reach this API's body decoder
    keep = data.draw(st.sampled_from([0, 4]))
    bad = data.draw(mutated(frame, keep=keep))
    with bounded_memory(len(bad)):
        only_protocol_errors(lambda: decode_request(bad))


@settings(max_examples=examples(300))
@given(frame=st.binary(max_size=256))
def test_arbitrary_bytes_as_a_request_raise_only_protocol_errors(frame: bytes) -> None:
    with bounded_memory(len(frame)):
        only_protocol_errors(lambda: decode_request(frame))
        only_protocol_errors(lambda: parse_request_header(frame))


@settings(max_examples=examples(300))
@given(api=st.sampled_from([(k, v) for k, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]),
       tail=st.binary(max_size=128), correlation_id=st.integers(-(2**31), 2**31 - 1), client_id=client_ids)
def test_arbitrary_bodies_behind_a_valid_header_raise_only_protocol_errors(
        api: tuple[int, int], tail: bytes, correlation_id: int, client_id: str | None) -> None:
    api_key, version = api
    header = encode_request_header(api_key, version, correlation_id, client_id)
    with bounded_memory(len(header) + len(tail)):
        got = only_protocol_errors(lambda: decode_request(header + tail))
    if got is not None:
        expected_client = client_id if request_header_version(api_key, version) else None
        assert got[0] == RequestHeader(api_key, version, correlation_id, expected_client)


# ----------------------------------------------------------------------------------------------- responses
@pytest.mark.parametrize("api_key", API_KEYS, ids=_IDS)
@settings(max_examples=examples(10))
@given(data=st.data())
def test_mutated_responses_raise_only_protocol_errors_within_bounds(api_key: int, data: st.DataObject) -> None:
    response = REGISTRY[api_key][1]
    version = data.draw(st.integers(response.valid.lo, response.valid.hi))
    header = RequestHeader(api_key, version, data.draw(st.integers(-(2**31), 2**31 - 1)), None)
    frame = encode_response(header, data.draw(body_of(response, version)))[4:]
    bad = data.draw(mutated(frame))
    with bounded_memory(len(bad)):
        only_protocol_errors(lambda: decode_response(api_key, version, bad))


# ----------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("api_key", API_KEYS, ids=_IDS)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_requests_round_trip(api_key: int, data: st.DataObject) -> None:
    request = REGISTRY[api_key][0]
    lo, hi = SUPPORTED[api_key]
    version = data.draw(st.integers(request.valid.lo, request.valid.hi))
    body = data.draw(body_of(request, version))
    if lo <= version <= hi:  # the broker's entry point, header included
        correlation_id, client_id = data.draw(st.integers(-(2**31), 2**31 - 1)), data.draw(client_ids)
        wire = encode_request(api_key, version, correlation_id, client_id, body)
        if request_header_version(api_key, version) == 0:
            client_id = None  # header v0 (ControlledShutdown v0) has no client id
        assert decode_request(wire[4:]) == (RequestHeader(api_key, version, correlation_id, client_id), body)
    else:  # versions the schema has but the broker does not accept: the body codec alone
        enc, dec = message_codec(request, version)
        out: list[bytes] = []
        enc(body, out)
        raw = b"".join(out)
        assert dec(raw, 0) == (body, len(raw))


@pytest.mark.parametrize("api_key", API_KEYS, ids=_IDS)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_responses_round_trip(api_key: int, data: st.DataObject) -> None:
    response = REGISTRY[api_key][1]
    version = data.draw(st.integers(response.valid.lo, response.valid.hi))
    body = data.draw(body_of(response, version))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    wire = encode_response(RequestHeader(api_key, version, correlation_id, None), body)
    assert decode_response(api_key, version, wire[4:]) == (correlation_id, body)


# ----------------------------------------------------------------------------------------------- framing, varints
@settings(max_examples=examples(200))
@given(payloads=st.lists(st.binary(max_size=40), max_size=6), cuts=st.lists(st.integers(0, 300), max_size=8),
       tail=st.binary(max_size=3))
def test_frame_decoder_returns_the_same_frames_however_the_stream_is_cut(
        payloads: list[bytes], cuts: list[int], tail: bytes) -> None:
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads) + tail
    decoder = FrameDecoder(max_frame_size=64)
    got: list[bytes] = []
    start = 0
    for cut in [*sorted(c for c in cuts if c < len(stream)), len(stream)]:
        got += decoder.feed(stream[start:cut])
        start = max(start, cut)
    assert got == payloads
    assert decoder.buffered == len(tail)  # an incomplete prefix waits; nothing is lost or invented


@settings(max_examples=examples(200))
@given(prefix=st.integers(-(2**31), 2**31 - 1), max_frame_size=st.integers(0, 2**20), rest=st.binary(max_size=16))
def test_frame_decoder_refuses_a_size_outside_its_limit_before_buffering(
        prefix: int, max_frame_size: int, rest: bytes) -> None:
    decoder = FrameDecoder(max_frame_size)
    rest = rest[: max(prefix, 0)]  # at most the one frame the prefix announces
    wire = prefix.to_bytes(4, "big", signed=True) + rest
    if 0 <= prefix <= max_frame_size:
        frames = decoder.feed(wire)
        assert frames == ([rest] if len(rest) == prefix else [])
        assert decoder.buffered == (0 if frames else len(rest))
    else:
        with pytest.raises(FrameTooLarge):
            decoder.feed(wire)


@settings(max_examples=examples(300))
@given(unsigned=st.integers(0, 2**32 - 1), signed=st.integers(-(2**63), 2**63 - 1), junk=st.binary(max_size=12))
def test_varints_round_trip_and_garbage_raises_only_their_errors(unsigned: int, signed: int, junk: bytes) -> None:
    assert read_uvarint(write_uvarint(unsigned) + junk, 0) == (unsigned, len(write_uvarint(unsigned)))
    out = bytearray()
    write_varint(signed, out)
    assert read_varint(bytes(out) + junk, 0) == (signed, len(out))
    for read in (read_uvarint, read_varint):
        try:
            value, end = read(junk, 0)
        except (IndexError, VarintError):
            continue
        assert 0 < end <= len(junk)
        assert -(2**63) <= value < 2**64


# ----------------------------------------------------------------------------------------------- tagged fields
def _top_level_tags() -> list[Any]:
    """(api key, version, field) of every known top-level tagged field of a supported request version."""
    out = []
    for api_key, (lo, hi) in sorted(SUPPORTED.items()):
        request = REGISTRY[api_key][0]
        for version in range(lo, hi + 1):
            out += [pytest.param(api_key, version, f, id=f"{request.name.removesuffix('Request')}-v{version}-{f.name}")
                    for f in request.fields
                    if version in request.flexible and f.tag is not None and version in f.tagged]
    return out


_TAGGED_REPEATS = 200_000
_TAG_VALUES = {"int8": 1, "int64": 7, "string": "fuzz"}


@pytest.mark.parametrize(("api_key", "version", "field"), _top_level_tags())
def test_a_tagged_field_repeated_costs_linear_time(api_key: int, version: int, field: Field) -> None:
    # Kafka's readers take a tag seen twice as the last one; 200,000 repeats (a 2-3 MB request) must cost a fraction
    # of a second, not a copy of the frame per repeat (minutes of a handler thread for a 100 MB request).
    value = _TAG_VALUES[field.type]
    encode, _ = value_codec(field, version, True)
    chunks: list[bytes] = []
    encode(value, chunks)
    raw = b"".join(chunks)
    entry = write_uvarint(field.tag or 0) + write_uvarint(len(raw)) + raw
    frame = encode_request(api_key, version, 1, "fuzz", {})[4:]
    assert frame.endswith(b"\x00")  # the top-level tagged-field section, empty, ends the request
    frame = frame[:-1] + write_uvarint(_TAGGED_REPEATS) + entry * _TAGGED_REPEATS
    started = time.process_time()
    _, body = decode_request(frame)
    spent = time.process_time() - started
    assert body[field.key] == value
    assert spent < 1.5, f"{spent:.2f} s of CPU to decode {len(frame)} bytes"
