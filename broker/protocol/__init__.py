"""Sans-IO Kafka wire protocol: framing, headers, declarative message schemas, record batches.

Bytes in, ``(RequestHeader, dict)`` out, and back; no sockets, threads or clocks here.

Typical broker use::

    frames = decoder.feed(data)              # FrameDecoder(max_frame_size); FrameTooLarge -> close
    header, body = decode_request(frame)     # CorruptRequest / UnknownApi / UnsupportedVersion
    wire = encode_response(header, {...})    # framed bytes to write back
    wire = error_response(header, code, body)  # Kafka's getErrorResponse shape (None: close)

Body conventions (every API, every version):

* keys are the snake_case of Kafka's JSON field names (``PartitionIndex`` -> ``partition_index``;
  ``isKRaftController`` -> ``is_kraft_controller``); only fields present in the version appear when
  decoding; missing keys take the schema default when encoding, keys of other versions are ignored;
* ``uuid`` fields are :class:`uuid.UUID` (the zero UUID when unset); ``bytes``/``records`` are
  ``bytes`` (``memoryview``/``bytearray`` accepted on encode); nullable fields may be ``None``;
* tagged fields of flexible versions are named keys (absent on the wire = schema default); unknown
  tags round-trip through ``_tagged_fields: dict[int, bytes]``;
* planewatch extension: ``max_broker_epoch`` (tag 100, default -1) in flexible LeaderAndIsr (4+),
  UpdateMetadata (6+) and StopReplica (2+), see :mod:`.messages.leader_and_isr`.

:data:`SUPPORTED` is what the broker may advertise; :data:`REGISTRY` holds the schema tables (more
versions than advertised, for clients and tools).  :mod:`.records` parses and patches record batches.

Modules: `api` (The codec's public entry points); `api_keys` (API keys and their `ApiKeys` names (the `request=` tag
of Kafka's RequestMetrics)); `batch` (Record batch v2 (magic 2) headers); `codec` (Schema compiler); `compression`
(The record batch compression codecs (attribute bits 0-2)); `error_bodies` (Error bodies per API); `error_codes`
(Kafka error codes, named exactly as `org.apache.kafka.common.protocol.Errors` (3.8)); `errors` (The protocol
package's exception hierarchy (one base, translated once at the receive...); `json_view` (KIP-673 JSON views of
requests and responses (`kafka-request.log` since 2.8)); `releases` (The API version ranges of Kafka releases);
`request_header` (The decoded request header, a plain value); `varint` (Kafka's variable-length integers
(`ByteUtils`)).
"""

from __future__ import annotations

from .api import decode_request, decode_response, encode_request, encode_response, error_response
from .api_keys import API_NAMES, ApiKey
from .error_codes import ErrorCode
from .errors import (
    CorruptRecord,
    CorruptRequest,
    EncodeError,
    FrameTooLarge,
    ProtocolError,
    UnknownApi,
    UnsupportedVersion,
)
from .framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from .headers import (
    RequestHeader,
    is_flexible,
    parse_request_header,
    request_header_version,
    response_header_version,
)
from .json_view import request_header_to_json, request_to_json, response_to_json, uuid_to_kafka_string
from .messages import REGISTRY, SUPPORTED
from .messages.leader_and_isr import MAX_BROKER_EPOCH_TAG

__all__ = [
    "API_NAMES",
    "DEFAULT_MAX_FRAME_SIZE",
    "MAX_BROKER_EPOCH_TAG",
    "REGISTRY",
    "SUPPORTED",
    "ApiKey",
    "CorruptRecord",
    "CorruptRequest",
    "EncodeError",
    "ErrorCode",
    "FrameDecoder",
    "FrameTooLarge",
    "ProtocolError",
    "RequestHeader",
    "UnknownApi",
    "UnsupportedVersion",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_response",
    "is_flexible",
    "parse_request_header",
    "request_header_to_json",
    "request_header_version",
    "request_to_json",
    "response_header_version",
    "response_to_json",
    "uuid_to_kafka_string",
]
