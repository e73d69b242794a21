"""RequestMetrics and the request log, updated when a response send completes (Kafka's ``updateRequestMetrics``).

Histograms ``kafka.network:type=RequestMetrics,name=<RequestQueueTimeMs|LocalTimeMs|RemoteTimeMs|ThrottleTimeMs|
ResponseQueueTimeMs|ResponseSendTimeMs|TotalTimeMs>,request=<Api>`` in milliseconds, ``RequestBytes`` (the request
body's size in bytes, the header excluded, as Kafka's ``sizeOfBodyInBytes``), meters
``RequestsPerSec,request=<Api>,version=<v>`` and ``ErrorsPerSec,request=<Api>,error=<ERROR_NAME>`` (one mark per error
occurrence, NONE included, as ``AbstractResponse.errorCounts``). Both planes share them (same names: Yammer returns
the existing metric), so LeaderAndIsr metrics are plane-agnostic as in Kafka.

When ``kafka.request.logger`` is enabled for DEBUG and the handler gave ``request_json``, the processor thread writes
the 2.8 JSON ``Completed request:{...}`` line (:mod:`broker.network.request_log`) with the same timings.
"""

from __future__ import annotations

from broker.log4j import KafkaLogger
from broker.metrics.registry import Histogram, Meter, MetricName, MetricsRegistry
from broker.network.request import Request, Response
from broker.network.request_log import format_completed_request, nanos_to_ms
from broker.protocol import API_NAMES, ApiKey, CorruptRequest, ErrorCode, request_header_version
from broker.protocol.headers import read_request_header

__all__ = ["HISTOGRAMS", "RequestMetrics"]

HISTOGRAMS = (
    "RequestQueueTimeMs",
    "LocalTimeMs",
    "RemoteTimeMs",
    "ThrottleTimeMs",
    "ResponseQueueTimeMs",
    "ResponseSendTimeMs",
    "TotalTimeMs",
)


def error_name(code: int) -> str:
    """Kafka's ``Errors`` enum name of a wire error code (``UNKNOWN_<code>`` when it is not one)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def _body_bytes(frame: bytes) -> int:
    """The size of a request's body: the frame after its header (the processor parsed that header already)."""
    try:
        return len(frame) - read_request_header(frame)[1]
    except CorruptRequest:
        return len(frame)


class RequestMetrics:
    """Per request-type histograms and meters, created on first use."""

    def __init__(self, registry: MetricsRegistry) -> None:
        self._registry = registry
        self._histograms: dict[tuple[str, str], Histogram] = {}
        self._meters: dict[tuple[str, str, str], Meter] = {}

    def _histogram(self, api: str, name: str) -> Histogram:
        key = (api, name)
        h = self._histograms.get(key)
        if h is None:
            h = self._registry.histogram(MetricName.of("kafka.network", "RequestMetrics", name, request=api))
            self._histograms[key] = h
        return h

    def _meter(self, name: str, api: str, tag: str, value: str) -> Meter:
        key = (name, api, value)
        m = self._meters.get(key)
        if m is None:
            tags = (("request", api), (tag, value))
            m = self._registry.meter(MetricName("kafka.network", "RequestMetrics", name, tags))
            self._meters[key] = m
        return m

    def record(self, request: Request, response: Response, end_ns: int, request_log: KafkaLogger | None) -> None:
        """Update the metrics for a completed request and write its request-log line (if enabled)."""
        header = request.header
        api = response.metric_name or API_NAMES.get(header.api_key, str(header.api_key))
        dequeue = request.dequeue_ns or request.start_ns
        local_done = request.api_local_complete_ns or dequeue
        resp_complete = request.response_complete_ns or local_done
        resp_dequeue = request.response_dequeue_ns or resp_complete
        times = {
            "RequestQueueTimeMs": dequeue - request.start_ns,
            "LocalTimeMs": local_done - dequeue,
            "RemoteTimeMs": resp_complete - local_done,
            "ThrottleTimeMs": 0,
            "ResponseQueueTimeMs": resp_dequeue - resp_complete,
            "ResponseSendTimeMs": end_ns - resp_dequeue,
            "TotalTimeMs": end_ns - request.start_ns,
        }
        for name, nanos in times.items():
            self._histogram(api, name).update(nanos_to_ms(nanos))
        self._histogram(api, "RequestBytes").update(float(_body_bytes(request.frame)))
        self._meter("RequestsPerSec", api, "version", str(header.api_version)).mark()
        for code in response.error_codes:
            self._meter("ErrorsPerSec", api, "error", error_name(code)).mark()
        if request_log is not None and response.request_json is not None and request_log.is_debug_enabled():
            try:
                key_name = ApiKey(header.api_key).name
            except ValueError:
                key_name = str(header.api_key)
            request_log.debug(
                format_completed_request(
                    api_key=header.api_key,
                    api_version=header.api_version,
                    correlation_id=header.correlation_id,
                    client_id=header.client_id,
                    api_key_name=key_name,
                    request=response.request_json,
                    response=response.response_json,
                    connection_id=request.connection_id,
                    total_time_ms=nanos_to_ms(times["TotalTimeMs"]),
                    request_queue_time_ms=nanos_to_ms(times["RequestQueueTimeMs"]),
                    local_time_ms=nanos_to_ms(times["LocalTimeMs"]),
                    remote_time_ms=nanos_to_ms(times["RemoteTimeMs"]),
                    throttle_time_ms=0,
                    response_queue_time_ms=nanos_to_ms(times["ResponseQueueTimeMs"]),
                    send_time_ms=nanos_to_ms(times["ResponseSendTimeMs"]),
                    security_protocol=request.security_protocol,
                    listener=request.listener,
                    client_software_name=request.client_software_name,
                    client_software_version=request.client_software_version,
                    header_version=request_header_version(header.api_key, header.api_version),
                )
            )
