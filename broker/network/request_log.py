"""kafka-request.log's message: Kafka 2.8's JSON ``Completed request:{...}`` (KIP-673, ``RequestConvertToJson``).

The processor thread writes it through ``kafka.request.logger`` at DEBUG (:mod:`broker.network.request_metrics`),
with the same timings the RequestMetrics histograms receive. Numbers follow Java's ``Double.toString`` as Jackson
writes them, so the lines are byte-for-byte what a Kafka broker logs, up to a size: the request and response views
come from :mod:`broker.protocol.json_view`, built on the handler thread and bounded there (at most
``MAX_LOGGED_ELEMENTS`` array elements each), so what this module formats on the network thread is bounded too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["format_completed_request", "java_double", "nanos_to_ms"]


def nanos_to_ms(nanos: int) -> float:
    """RequestChannel.nanosToMs: negative clamps to 0, then whole microseconds / 1000 (``0.085``)."""
    micros = max(nanos, 0) // 1000
    return micros / 1000.0


def java_double(value: float) -> str:
    """``Double.toString`` as Jackson's DoubleNode writes it: ``1.0``, ``0.085``, ``1.0E-4``, ``1.0E7``, ``NaN``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    # Java switches to computerized scientific notation outside [1e-3, 1e7): one digit, '.', digits, 'E', exponent.
    digits_tuple = Decimal(repr(magnitude)).as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    exponent = int(digits_tuple.exponent) + len(digits) - 1
    significant = digits.rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{significant[0]}.{significant[1:] or '0'}E{exponent}"


def _json_value(value: Any) -> str:
    """Compact Jackson-style JSON for a request/response body (floats as Java doubles)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + _json_value(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json_value(v) for v in value) + "]"
    if isinstance(value, bytes | bytearray):
        return json.dumps(value.hex())
    raise TypeError(f"cannot write {type(value).__name__} into the request log")


def format_completed_request(
    *,
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    api_key_name: str,
    request: Any,
    response: Any,
    connection_id: str,
    total_time_ms: float,
    request_queue_time_ms: float,
    local_time_ms: float,
    remote_time_ms: float,
    throttle_time_ms: int,
    response_queue_time_ms: float,
    send_time_ms: float,
    security_protocol: str = "PLAINTEXT",
    principal: str = "User:ANONYMOUS",
    listener: str = "PLAINTEXT",
    client_software_name: str = "unknown",
    client_software_version: str = "unknown",
    is_forwarded: bool = False,
    header_version: int = 1,
    temporary_memory_bytes: int = 0,
    message_conversions_time_ms: float = 0.0,
) -> str:
    """The kafka-request.log message of Kafka 2.8+: ``Completed request:{...}`` (FACTS.md section 2).

    Key order as ``RequestConvertToJson.requestDescMetrics``: isForwarded, requestHeader{requestApiKey,
    requestApiVersion, correlationId, clientId, requestApiKeyName}, request, response, connection, totalTimeMs,
    requestQueueTimeMs, localTimeMs, remoteTimeMs, throttleTimeMs (long), responseQueueTimeMs, sendTimeMs,
    securityProtocol, principal, listener, clientInformation{softwareName, softwareVersion}, then
    temporaryMemoryBytes / messageConversionsTime only when positive.

    Args:
        api_key_name: the ApiKeys enum name, e.g. ``LEADER_AND_ISR`` (``header.apiKey.toString``).
        request: the KIP-673 camelCase JSON of the request body (a mapping), or None for ``""``.
        response: the same for the response, or None for ``""`` (e.g. a closed connection).
        connection_id: ``localHost:localPort-remoteHost:remotePort-index``.
        header_version: request header version; version 0 has no clientId.
        Times are milliseconds (use :func:`nanos_to_ms` on nanosecond clocks, as Kafka does).
    """
    header = [f'"requestApiKey":{int(api_key)}', f'"requestApiVersion":{int(api_version)}',
              f'"correlationId":{int(correlation_id)}']
    if header_version >= 1:
        header.append('"clientId":' + _json_value(client_id))
    header.append('"requestApiKeyName":' + _json_value(api_key_name))
    parts = [
        '"isForwarded":' + ("true" if is_forwarded else "false"),
        '"requestHeader":{' + ",".join(header) + "}",
        '"request":' + (_json_value(request) if request is not None else '""'),
        '"response":' + (_json_value(response) if response is not None else '""'),
        '"connection":' + _json_value(connection_id),
        '"totalTimeMs":' + java_double(float(total_time_ms)),
        '"requestQueueTimeMs":' + java_double(float(request_queue_time_ms)),
        '"localTimeMs":' + java_double(float(local_time_ms)),
        '"remoteTimeMs":' + java_double(float(remote_time_ms)),
        '"throttleTimeMs":' + str(int(throttle_time_ms)),
        '"responseQueueTimeMs":' + java_double(float(response_queue_time_ms)),
        '"sendTimeMs":' + java_double(float(send_time_ms)),
        '"securityProtocol":' + _json_value(security_protocol),
        '"principal":' + _json_value(principal),
        '"listener":' + _json_value(listener),
        '"clientInformation":{"softwareName":' + _json_value(client_software_name)
        + ',"softwareVersion":' + _json_value(client_software_version) + "}",
    ]
    if temporary_memory_bytes > 0:
        parts.append(f'"temporaryMemoryBytes":{int(temporary_memory_bytes)}')
    if message_conversions_time_ms > 0:
        parts.append('"messageConversionsTime":' + java_double(float(message_conversions_time_ms)))
    return "Completed request:{" + ",".join(parts) + "}"
