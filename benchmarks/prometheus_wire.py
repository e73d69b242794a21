"""Prometheus's remote-read and remote-write wire format for benchmarks.prometheus_reads: snappy-compressed protobuf
(prompb's ReadRequest, ReadResponse and WriteRequest), encoded and decoded by hand for the few fields they use.

    ReadRequest  {1: repeated Query {1: start_ms, 2: end_ms, 3: repeated LabelMatcher {1: type, 2: name, 3: value}}}
    ReadResponse {1: repeated QueryResult {1: repeated TimeSeries}}
    WriteRequest {1: repeated TimeSeries}
    TimeSeries   {1: repeated Label {1: name, 2: value}, 2: repeated Sample {1: double value, 2: int64 ts_ms}}
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam

__all__ = ["MATCH_RE", "decode_read_response", "decode_write_request", "read_request"]

# LabelMatcher.Type: EQ 0, NEQ 1, RE 2, NRE 3.
MATCH_RE = 2
_VARINT, _I64, _LEN = 0, 1, 2


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, wire: int, payload: bytes | int) -> bytes:
    key = _varint(num << 3 | wire)
    if wire == _VARINT:
        assert isinstance(payload, int)
        return key + _varint(payload)
    assert isinstance(payload, bytes)
    return key + _varint(len(payload)) + payload


def read_request(start_ms: int, end_ms: int, matchers: list[tuple[int, str, str]]) -> bytes:
    """A snappy-compressed ReadRequest of one query over [start_ms, end_ms] with `matchers` (type, name, value)."""
    query = _field(1, _VARINT, start_ms) + _field(2, _VARINT, end_ms)
    for kind, name, value in matchers:
        query += _field(3, _LEN, _field(1, _VARINT, kind) + _field(2, _LEN, name.encode())
                        + _field(3, _LEN, value.encode()))
    return bytes(cramjam.snappy.compress_raw(_field(1, _LEN, query)))


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == _VARINT:
            v, i = _read_varint(buf, i)
            yield num, wire, v
        elif wire == _I64:
            yield num, wire, buf[i:i + 8]
            i += 8
        elif wire == _LEN:
            n, i = _read_varint(buf, i)
            yield num, wire, buf[i:i + n]
            i += n
        elif wire == 5:
            yield num, wire, buf[i:i + 4]
            i += 4
        else:
            raise ValueError(f"protobuf wire type {wire} not read here")


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _series(buf: bytes) -> tuple[dict[str, str], list[tuple[int, float]]]:
    labels: dict[str, str] = {}
    samples: list[tuple[int, float]] = []
    for num, _, v in _fields(buf):
        assert isinstance(v, bytes)
        if num == 1:
            kv = {n: x for n, _, x in _fields(v) if isinstance(x, bytes)}
            labels[kv.get(1, b"").decode()] = kv.get(2, b"").decode()
        elif num == 2:
            value, ts = 0.0, 0
            for n, _, x in _fields(v):
                if n == 1 and isinstance(x, bytes):
                    value = struct.unpack("<d", x)[0]
                elif n == 2 and isinstance(x, int):
                    ts = x
            samples.append((ts, value))
    return labels, samples


def decode_read_response(body: bytes) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    """The series of a snappy-compressed ReadResponse (every query's)."""
    out = []
    for num, _, result in _fields(bytes(cramjam.snappy.decompress_raw(body))):
        if num == 1:
            assert isinstance(result, bytes)
            out += [_series(ts) for n, _, ts in _fields(result) if n == 1 and isinstance(ts, bytes)]
    return out


def decode_write_request(body: bytes) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    """The series of a snappy-compressed WriteRequest."""
    return [_series(ts) for n, _, ts in _fields(bytes(cramjam.snappy.decompress_raw(body)))
            if n == 1 and isinstance(ts, bytes)]
