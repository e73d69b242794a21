"""The codec's public entry points: requests and responses as ``(header, dict)`` ↔ framed bytes.

Every decode error (struct.error, IndexError, bad UTF-8, varint overflow, trailing bytes …) is
translated into :class:`CorruptRequest` here and only here.
"""

from __future__ import annotations

import struct
from typing import Any

from .api_keys import ApiKey
from .codec import DECODE_ERRORS, Malformed, message_codec
from .error_bodies import error_body
from .error_codes import ErrorCode
from .errors import CorruptRequest, EncodeError, ProtocolError, UnknownApi, UnsupportedVersion
from .headers import RequestHeader, encode_request_header, read_request_header, response_header_version
from .messages import REGISTRY, SUPPORTED
from .schema import Message
from .varint import read_uvarint

__all__ = [
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_response",
]

_I32 = struct.Struct(">i")
_ENCODE_ERRORS = (Malformed, struct.error, TypeError, AttributeError, ValueError, OverflowError, KeyError)


def _encode_body(message: Message, version: int, body: dict[str, Any], head: bytes) -> bytes:
    enc, _ = message_codec(message, version)
    out: list[bytes] = [head]
    try:
        enc(body, out)
    except _ENCODE_ERRORS as exc:
        raise EncodeError(f"cannot encode {message.name} v{version}: {type(exc).__name__}: {exc}") from exc
    payload = b"".join(out)
    return _I32.pack(len(payload)) + payload


def _decode_body(message: Message, version: int, frame: bytes, pos: int) -> dict[str, Any]:
    _, dec = message_codec(message, version)
    try:
        body, end = dec(frame, pos)
    except DECODE_ERRORS as exc:
        raise CorruptRequest(
            f"Error reading {message.name} v{version}: {type(exc).__name__}: {exc}", ErrorCode.INVALID_REQUEST
        ) from None
    if end != len(frame):
        raise CorruptRequest(
            f"{message.name} v{version}: {len(frame) - end} unexpected trailing bytes", ErrorCode.INVALID_REQUEST
        )
    result: dict[str, Any] = body
    return result


def decode_request(frame: bytes) -> tuple[RequestHeader, dict[str, Any]]:
    """Decode a request frame (without its size prefix) into its header and body dict.

    Raises:
        CorruptRequest: garbled header or body (error_code INVALID_REQUEST).
        UnknownApi: api_key not implemented (``.header`` is set; Kafka closes the connection).
        UnsupportedVersion: version outside :data:`SUPPORTED` (``.header`` is set; answer with
            :func:`error_response`).
    """
    if isinstance(frame, memoryview | bytearray):
        frame = bytes(frame)
    header, pos = read_request_header(frame)
    supported = SUPPORTED.get(header.api_key)
    if supported is None:
        raise UnknownApi(header)
    if not supported[0] <= header.api_version <= supported[1]:
        raise UnsupportedVersion(header, supported)
    return header, _decode_body(REGISTRY[header.api_key][0], header.api_version, frame, pos)


def _response_head(api_key: int, api_version: int, correlation_id: int) -> bytes:
    head = _I32.pack(correlation_id)
    return head + b"\x00" if response_header_version(api_key, api_version) == 1 else head


def encode_response(header: RequestHeader, body: dict[str, Any]) -> bytes:
    """Encode a response to ``header``'s request, WITH the 4-byte size prefix.

    Raises:
        UnknownApi: no schema for the api_key.
        EncodeError: ``body`` does not fit the schema.
    """
    entry = REGISTRY.get(header.api_key)
    if entry is None:
        raise UnknownApi(header)
    head = _response_head(header.api_key, header.api_version, header.correlation_id)
    return _encode_body(entry[1], header.api_version, body, head)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict[str, Any]
) -> bytes:
    """Encode a request (header in the version the API needs), WITH the 4-byte size prefix."""
    entry = REGISTRY.get(api_key)
    if entry is None:
        raise ProtocolError(f"no schema for API key {api_key}")
    if api_version not in entry[0].valid:
        raise ProtocolError(f"{entry[0].name} has no version {api_version}")
    head = encode_request_header(api_key, api_version, correlation_id, client_id)
    return _encode_body(entry[0], api_version, body, head)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """Decode a response frame (without its size prefix); returns ``(correlation_id, body)``.

    Raises:
        CorruptRequest: garbled header or body.
        ProtocolError: no schema for ``api_key``/``api_version``.
    """
    entry = REGISTRY.get(api_key)
    if entry is None or api_version not in entry[1].valid:
        raise ProtocolError(f"no response schema for API key {api_key} v{api_version}")
    if isinstance(frame, memoryview | bytearray):
        frame = bytes(frame)
    try:
        correlation_id = _I32.unpack_from(frame, 0)[0]
        pos = 4
        if response_header_version(api_key, api_version) == 1:
            count, pos = read_uvarint(frame, pos)
            for _ in range(count):
                _tag, pos = read_uvarint(frame, pos)
                size, pos = read_uvarint(frame, pos)
                pos += size
    except DECODE_ERRORS as exc:
        raise CorruptRequest(f"Error reading response header: {exc}") from None
    return correlation_id, _decode_body(entry[1], api_version, frame, pos)


# ------------------------------------------------------------------------------------------ error responses

_THROTTLE_KEY = "throttle_time_ms"


def error_response(header: RequestHeader, error_code: int, request: dict[str, Any] | None = None) -> bytes | None:
    """Kafka's generic error answer (``AbstractRequest.getErrorResponse``) to ``header``'s request, framed.

    Every top-level ``error_code`` of the response schema carries ``error_code``.  When the decoded
    ``request`` body is given, the per-partition/per-topic answers of the main APIs are filled in with
    the same code, as Kafka does (see :mod:`broker.protocol.error_bodies`).

    ApiVersions with a version this broker does not support gets the v0 body with
    UNSUPPORTED_VERSION and only ApiVersions' own range (KIP-511), whatever ``error_code`` says.

    Returns:
        The framed response, or None when the api_key is unknown (the caller closes the connection,
        as Kafka does).
    """
    if header.api_key not in REGISTRY:
        return None
    if header.api_key == ApiKey.API_VERSIONS:
        lo, hi = SUPPORTED[ApiKey.API_VERSIONS]
        if not lo <= header.api_version <= hi:
            body = {
                "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": lo, "max_version": hi}],
            }
            v0 = RequestHeader(header.api_key, 0, header.correlation_id, header.client_id)
            return encode_response(v0, body)
    version = header.api_version
    response = REGISTRY[header.api_key][1]
    if version not in response.valid:
        # Outside any schema: answer in the closest version the schema has, as the best effort.
        version = min(max(version, response.valid.lo), response.valid.hi)
        header = RequestHeader(header.api_key, version, header.correlation_id, header.client_id)
    body = error_body(header.api_key, version, int(error_code), request)
    return encode_response(header, body)
