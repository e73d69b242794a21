"""RequestChannel: the bounded request queue between processors and handlers, and the per-processor response queues.

Kafka's ``RequestChannel(queueSize, metricNamePrefix)``: the data plane's request queue holds ``queued.max.requests``
requests and a processor that finds it full **blocks** (backpressure into the network threads, then into the
clients' TCP windows); the control plane's holds 20 (KIP-291, hard-coded). Responses go to the queue of the processor
that owns the connection (unbounded, as Kafka's LinkedBlockingDeque), which is then woken up.

Gauges: ``kafka.network:type=RequestChannel,name={prefix}RequestQueueSize``, ``{prefix}ResponseQueueSize`` (sum) and
``{prefix}ResponseQueueSize,processor=N``; prefix is "" (data plane) or "ControlPlane".
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Final, Protocol

from broker.metrics.registry import MetricName, MetricsRegistry
from broker.network.request import Request, Response

__all__ = ["CONTROL_PLANE_QUEUE_SIZE", "SHUTDOWN", "RequestChannel", "ResponseSink", "ShutdownRequest"]

# KIP-291: the control plane's request queue is fixed at 20 (the controller has at most one request in flight per
# broker, so 20 is ample and keeps a runaway client on the control listener from queuing unboundedly).
CONTROL_PLANE_QUEUE_SIZE: Final = 20
# A processor blocked on a full request queue re-checks its running flag this often (shutdown must not hang).
PUT_SLICE_S: Final = 0.1


class ShutdownRequest:
    """The poison pill a handler thread exits on (Kafka's ``RequestChannel.ShutdownRequest``)."""

    __slots__ = ()


SHUTDOWN: Final = ShutdownRequest()


class ResponseSink(Protocol):
    """What a processor offers the channel: a response queue and a wake-up."""

    id: int

    def enqueue_response(self, request: Request, response: Response) -> None: ...
    def response_queue_size(self) -> int: ...


class RequestChannel:
    """One plane's request queue plus the response routing to its processors."""

    def __init__(
        self,
        queue_size: int,
        metric_prefix: str,
        registry: MetricsRegistry,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.queue_size = queue_size
        self.metric_prefix = metric_prefix
        self._requests: queue.Queue[Request | ShutdownRequest] = queue.Queue(maxsize=queue_size)
        self._processors: dict[int, ResponseSink] = {}
        self._lock = threading.Lock()
        self._registry = registry
        self._clock = clock
        registry.gauge(MetricName.of("kafka.network", "RequestChannel", f"{metric_prefix}RequestQueueSize"),
                       self._requests.qsize)
        registry.gauge(MetricName.of("kafka.network", "RequestChannel", f"{metric_prefix}ResponseQueueSize"),
                       self.total_response_queue_size)

    def add_processor(self, processor: ResponseSink) -> None:
        """Route responses for ``processor.id`` to it and publish its ResponseQueueSize gauge."""
        with self._lock:
            if processor.id in self._processors:
                raise ValueError(f"Processor with id {processor.id} already exists in the request channel")
            self._processors[processor.id] = processor
        self._registry.gauge(
            MetricName.of("kafka.network", "RequestChannel", f"{self.metric_prefix}ResponseQueueSize",
                          processor=processor.id),
            processor.response_queue_size,
        )

    def remove_processor(self, processor_id: int) -> None:
        with self._lock:
            self._processors.pop(processor_id, None)
        self._registry.remove(MetricName.of("kafka.network", "RequestChannel",
                                            f"{self.metric_prefix}ResponseQueueSize", processor=processor_id))

    def total_response_queue_size(self) -> int:
        with self._lock:
            sinks = list(self._processors.values())
        return sum(p.response_queue_size() for p in sinks)

    def request_queue_size(self) -> int:
        return self._requests.qsize()

    def send_request(self, request: Request, should_run: Callable[[], bool] = lambda: True) -> bool:
        """Enqueue a request, blocking while the queue is full (Kafka's ``requestQueue.put``).

        Returns False (request dropped) only when ``should_run()`` turns false while blocked (shutdown).
        """
        while True:
            try:
                self._requests.put(request, timeout=PUT_SLICE_S)
                return True
            except queue.Full:
                if not should_run():
                    return False

    def receive_request(self, timeout_s: float) -> Request | ShutdownRequest | None:
        """The next request, :data:`SHUTDOWN`, or None after ``timeout_s`` (Kafka polls with 300 ms)."""
        try:
            return self._requests.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def send_shutdown_request(self) -> None:
        """Put one poison pill (one per handler thread); blocks while the queue is full, as Kafka does."""
        self._requests.put(SHUTDOWN)

    def send_response(self, request: Request, response: Response) -> None:
        """Route a handler's response to the processor that owns the connection and wake it up."""
        request.response_complete_ns = self._clock()
        with self._lock:
            processor = self._processors.get(request.processor_id)
        if processor is not None:  # a processor gone at shutdown: the connection is closed anyway
            processor.enqueue_response(request, response)

    def clear(self) -> list[Request]:
        """Drain the request queue (shutdown); returns the requests that were never handled."""
        drained: list[Request] = []
        while True:
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                return drained
            if isinstance(item, Request):
                drained.append(item)
