"""The contract between the socket server and the request handlers (KafkaApis).

A :class:`Request` is created by a network processor when a complete frame has arrived and its header parsed; a
handler thread passes it to :meth:`RequestHandlerApi.handle`, which returns a :class:`Response` that the processor
that owns the connection sends. The timestamps follow Kafka's ``RequestChannel.Request`` (all
``time.monotonic_ns()``)::

    start_ns                 receive complete (processor)
    dequeue_ns               taken off the request queue (handler thread)
    api_local_complete_ns    handle() returned (handler thread)
    response_complete_ns     put on the processor's response queue (handler thread)
    response_dequeue_ns      taken off the response queue (processor)
    (send complete)          the last byte was written (processor) -> RequestMetrics and kafka-request.log

RequestQueueTimeMs = dequeue - start, LocalTimeMs = api_local_complete - dequeue, RemoteTimeMs = 0 (no purgatory yet),
ResponseQueueTimeMs = response_dequeue - response_complete, ResponseSendTimeMs = end - response_dequeue,
TotalTimeMs = end - start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from broker.protocol import RequestHeader

__all__ = ["Request", "RequestHandlerApi", "RequestHeader", "Response"]


@dataclass(slots=True)
class Request:
    """A complete request frame received on one connection (one in flight per connection)."""

    processor_id: int
    connection_id: str  # Kafka's "localAddr:localPort-remoteAddr:remotePort-index"
    listener: str  # listener name, e.g. "PLAINTEXT", "CONTROLLER"
    security_protocol: str
    client_host: str
    frame: bytes  # the request bytes after the size prefix
    header: RequestHeader  # parsed by the processor (garbage is rejected there)
    start_ns: int  # receive complete (time.monotonic_ns())
    dequeue_ns: int = 0  # set by the handler thread
    api_local_complete_ns: int = 0  # set by the handler thread when handle() returns
    response_complete_ns: int = 0  # set when the response is put on the processor's response queue
    response_dequeue_ns: int = 0  # set by the processor when it takes the response
    # KIP-511: what the connection's ApiVersions v3+ request said (kafka-request.log's clientInformation).
    client_software_name: str = "unknown"
    client_software_version: str = "unknown"


@dataclass(slots=True)
class Response:
    """What a handler returns; the processor that owns the connection sends it."""

    frame: bytes | None  # framed response; None = send nothing (acks=0), just unmute
    close: bool = False  # close the connection (after sending frame, if any)
    metric_name: str = ""  # RequestMetrics `request=` tag: "LeaderAndIsr", "FetchConsumer", ...
    error_codes: tuple[int, ...] = ()  # for ErrorsPerSec
    request_json: dict[str, Any] | None = None  # for kafka-request.log (None = not logged)
    response_json: dict[str, Any] | None = None


class RequestHandlerApi(Protocol):
    """KafkaApis: turns one request into one response. Called on handler threads, concurrently."""

    def handle(self, request: Request) -> Response:
        """Handle one request; exceptions are caught by the handler thread (the connection is then closed)."""
        ...
