"""Request and response headers (RequestHeader.json / ResponseHeader.json).

Request header v0: api_key, api_version, correlation_id (only ControlledShutdown v0 uses it);
v1 adds client_id as a NULLABLE int16-length string; v2 (flexible API versions) appends a tagged-field
section — and client_id stays int16-length, never compact.  Response header v0 is the correlation id;
v1 adds a tagged-field section for flexible versions, except ApiVersions whose response header is
always v0 (KIP-511: a client must read it before it knows which versions the broker speaks).
"""

from __future__ import annotations

import struct

from .api_keys import ApiKey
from .codec import DECODE_ERRORS, Malformed
from .errors import CorruptRequest
from .messages import REGISTRY
from .request_header import RequestHeader
from .varint import read_uvarint

__all__ = [
    "RequestHeader",
    "encode_request_header",
    "is_flexible",
    "parse_request_header",
    "read_request_header",
    "request_header_version",
    "response_header_version",
]

_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")


def is_flexible(api_key: int, api_version: int) -> bool:
    """True when ``api_version`` of ``api_key`` uses the flexible (compact + tagged fields) encoding."""
    entry = REGISTRY.get(api_key)
    return entry is not None and api_version in entry[0].flexible


def request_header_version(api_key: int, api_version: int) -> int:
    """0, 1 or 2 (see the module docstring)."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1; ApiVersions is always 0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def read_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Parse the header at the start of ``frame``; returns it and the offset of the body.

    Raises:
        CorruptRequest: the frame is shorter than its header or the client id is garbled.
    """
    try:
        api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
        pos = 8
        client_id: str | None = None
        hv = request_header_version(api_key, api_version)
        if hv >= 1:
            n = _I16.unpack_from(frame, pos)[0]
            pos += 2
            if n >= 0:
                if pos + n > len(frame):
                    raise Malformed("client id runs past the end of the frame")
                client_id = str(frame[pos : pos + n], "utf-8")
                pos += n
            elif n != -1:
                raise Malformed(f"client id length {n}")
        if hv >= 2:
            count, pos = read_uvarint(frame, pos)
            for _ in range(count):
                _tag, pos = read_uvarint(frame, pos)
                size, pos = read_uvarint(frame, pos)
                pos += size
            if pos > len(frame):
                raise Malformed("header tagged fields run past the end of the frame")
    except DECODE_ERRORS as exc:
        raise CorruptRequest(f"Error parsing request header: {exc}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def parse_request_header(frame: bytes) -> RequestHeader:
    """Parse the request header of a frame (without its size prefix).  Raises CorruptRequest."""
    return read_request_header(frame)[0]


def encode_request_header(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    """The header bytes of a request, in the header version the API/version requires."""
    hv = request_header_version(api_key, api_version)
    out = _HEAD.pack(api_key, api_version, correlation_id)
    if hv >= 1:
        if client_id is None:
            out += b"\xff\xff"
        else:
            b = client_id.encode("utf-8")
            out += _I16.pack(len(b)) + b
    if hv >= 2:
        out += b"\x00"
    return out
