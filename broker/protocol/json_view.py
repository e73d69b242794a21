"""KIP-673 JSON views of requests and responses (``kafka-request.log`` since 2.8).

Mirrors Kafka's generated ``*JsonConverter.write(data, version, serializeRecords=false)``: keys are the
schema names in lowerCamelCase, only fields present in the version appear, tagged fields only when
they differ from their default, UUIDs in Kafka's URL-safe base64 form, ``bytes`` as base64 and
``records`` as ``recordsSizeInBytes`` (the request logger never serialises record data).

Bounded, unlike Kafka's converters: one view holds at most :data:`MAX_LOGGED_ELEMENTS` array elements. A request
naming a topic a million times must not cost a million JSON objects on the handler thread and a line of tens of
megabytes formatted on the network thread (and written to kafka-request.log, which log shippers cut anyway). An array
cut short is followed by ``"<key>Omitted": <elements left out>``; a ``bytes`` value above
:data:`MAX_LOGGED_BYTES` is written as ``"<key>SizeInBytes"``, as records always are.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from .api_keys import ApiKey
from .headers import RequestHeader, request_header_version
from .messages import REGISTRY
from .schema import Field, Message

__all__ = ["MAX_LOGGED_BYTES", "MAX_LOGGED_ELEMENTS", "request_header_to_json", "request_to_json", "response_to_json",
           "uuid_to_kafka_string"]

#: Array elements (structs and scalars, at any depth) one request or response view holds: a LeaderAndIsr of 1,000
#: partitions (~250 KB of JSON) is logged whole; past that the line would outgrow what log shippers keep of a line.
MAX_LOGGED_ELEMENTS = 1000
#: A ``bytes`` value (group member metadata and assignments) up to this many bytes is logged as base64; above, its size.
MAX_LOGGED_BYTES = 4096
#: Key suffix of the count of an array's elements a view left out.
OMITTED_SUFFIX = "Omitted"


class _Budget:
    """Array elements a view may still write (one per view, spent depth-first in schema order)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def uuid_to_kafka_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def _value(fld: Field, version: int, flex: bool, value: Any, out: dict[str, Any], budget: _Budget) -> None:
    key = fld.json_key
    if value is None:
        out[key] = None
        return
    et = fld.element_type
    if fld.is_array:
        if fld.is_struct:
            items: list[Any] = []
            for e in value:
                if budget.left <= 0:
                    break
                budget.left -= 1
                items.append(_struct(fld.fields, version, flex, e, budget))
            out[key], kept = items, len(items)
        else:
            kept = min(len(value), budget.left)
            budget.left -= kept
            out[key] = [_scalar(et, e) for e in value[:kept]]
        if kept < len(value):
            out[key + OMITTED_SUFFIX] = len(value) - kept
    elif fld.is_struct:
        out[key] = _struct(fld.fields, version, flex, value, budget)
    elif et == "records" or (et == "bytes" and len(value) > MAX_LOGGED_BYTES):
        out[key + "SizeInBytes"] = len(value)
    else:
        out[key] = _scalar(et, value)


def _scalar(type_: str, value: Any) -> Any:
    if type_ == "uuid":
        return uuid_to_kafka_string(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    if type_ == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if type_ == "bool":
        return bool(value)
    return value


def _struct(fields: tuple[Field, ...], version: int, flex: bool, body: dict[str, Any],
            budget: _Budget) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld in fields:
        if version not in fld.versions:
            continue
        value = body.get(fld.key, fld.default)
        if fld.tag is not None and version in fld.tagged and (not flex or value == fld.default):
            continue
        _value(fld, version, flex, value, out, budget)
    return out


def _to_json(message: Message, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return _struct(message.fields, version, version in message.flexible, body, _Budget(MAX_LOGGED_ELEMENTS))


def request_to_json(header: RequestHeader, body: dict[str, Any]) -> dict[str, Any]:
    """The ``request`` object of a KIP-673 request-log line (camelCase, version-filtered)."""
    return _to_json(REGISTRY[header.api_key][0], header.api_version, body)


def response_to_json(api_key: int, api_version: int, body: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` object of a KIP-673 request-log line."""
    return _to_json(REGISTRY[api_key][1], api_version, body)


def request_header_to_json(header: RequestHeader) -> dict[str, Any]:
    """The ``requestHeader`` object of a KIP-673 line (``RequestConvertToJson.requestHeaderNode``).

    ``requestApiKeyName`` is the ``ApiKeys`` enum constant (``LEADER_AND_ISR``), as Kafka prints it.
    """
    try:
        name = ApiKey(header.api_key).name
    except ValueError:
        name = str(header.api_key)
    node: dict[str, Any] = {
        "requestApiKey": header.api_key,
        "requestApiVersion": header.api_version,
        "correlationId": header.correlation_id,
    }
    if request_header_version(header.api_key, header.api_version) >= 1:  # ClientId is "1+" in RequestHeader.json
        node["clientId"] = header.client_id
    node["requestApiKeyName"] = name
    return node
