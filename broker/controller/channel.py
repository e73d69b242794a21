"""The controller's channel to the brokers (Kafka 2.8 ``ControllerChannelManager`` / ``RequestSendThread``).

Theory of operation
-------------------
One :class:`RequestSendThread` per broker, each with its own FIFO queue and its own connection, sends **one request
at a time** and waits for its response before taking the next (KIP-291: the controller keeps at most one request in
flight per broker; a slow broker therefore delays only its own queue). The connection goes to the broker's
control-plane listener when it advertises one, else to its inter-broker listener (:func:`select_control_endpoint`
in :mod:`.requests`, decided by whoever adds the broker).

Failures, as Kafka handles them: a connection that cannot be made, a send that fails, or a response that does not
arrive within ``request.timeout.ms`` closes the connection, logs a WARN in controller.log, backs off
:data:`RETRY_BACKOFF_MS` and **resends the same request** on a new connection, until it succeeds, the broker is
removed, or the item's optional deadline passes (``planewatch control`` sets one; Kafka's controller has none).

Each completed request writes the TRACE state-change line
``Received response $response for request $api with correlation id $c sent to broker $node`` and completes the
item's :class:`~concurrent.futures.Future` (and callback). Correlation ids count per broker connection from 0, as
each broker's ``NetworkClient`` does.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from broker.controller.requests import BrokerNode, response_to_kafka_string
from broker.log4j import KafkaLogger, Log4j, default_log4j
from broker.metrics.registry import Histogram, MetricName, MetricsRegistry
from broker.network.client import BlockingClient, ClientError, with_correlation_id
from broker.protocol import API_NAMES, ApiKey, encode_request

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "RETRY_BACKOFF_MS",
    "ControlResponse",
    "ControllerChannelManager",
    "RequestSendThread",
    "with_correlation_id",
]

# request.timeout.ms (= controller.socket.timeout.ms) default in Kafka 2.x.
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# RequestSendThread.backoff(): pause 100 ms before reconnecting / resending.
RETRY_BACKOFF_MS = 100
# How long a send thread blocks on its queue before re-checking that it should still run.
_POLL_S = 0.1
# kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=N (the code uses broker-id, not brokerId).
_METRIC_DOMAIN, _METRIC_TYPE = "kafka.controller", "ControllerChannelManager"


def _broker_metric(name: str, broker_id: int) -> MetricName:
    return MetricName.of(_METRIC_DOMAIN, _METRIC_TYPE, name, **{"broker-id": broker_id})


@dataclass(frozen=True, slots=True)
class ControlResponse:
    """A broker's answer to one control request."""

    broker: BrokerNode
    api_key: int
    version: int
    correlation_id: int
    body: dict[str, Any]
    queue_time_ms: float  # enqueue -> first send attempt (RequestRateAndQueueTimeMs)
    round_trip_ms: float  # last send -> response


@dataclass(slots=True)
class _QueueItem:
    api_key: int
    version: int
    body: dict[str, Any]
    callback: Callable[[ControlResponse], None] | None
    deadline_ns: int | None
    frame_template: bytes | None = None  # pre-encoded request (shared UpdateMetadata); correlation id patched in
    future: Future[ControlResponse] = field(default_factory=Future)
    enqueue_ns: int = field(default_factory=time.monotonic_ns)


_STOP = object()


class RequestSendThread(threading.Thread):
    """Sends one broker's queued control requests, one in flight (see the module docstring)."""

    def __init__(self, manager: ControllerChannelManager, node: BrokerNode) -> None:
        super().__init__(name=f"Controller-{manager.controller_id}-to-broker-{node.id}-send-thread", daemon=True)
        self.manager = manager
        self.node = node
        self.queue: queue.Queue[Any] = queue.Queue()
        self._running = threading.Event()
        self._running.set()
        self._stopped = threading.Event()
        self._client = BlockingClient(
            node,
            peer=f"broker {node.id}",
            client_id=str(manager.client_id),
            timeout_s=manager.request_timeout_ms / 1000,
        )
        self._correlation = itertools.count(0)
        self.queue_time_ms: Histogram | None = None
        self._log = manager.log4j.get_logger(
            "kafka.controller.RequestSendThread", f"[RequestSendThread controllerId={manager.controller_id}] "
        )

    def initiate_shutdown(self) -> None:
        """Stop after the current attempt; queued items fail with ConnectionError."""
        self._running.clear()
        self._stopped.set()
        self.queue.put(_STOP)
        self._client.abort()

    def run(self) -> None:
        try:
            while self._running.is_set():
                try:
                    item = self.queue.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                if item is _STOP:
                    break
                self._process(item)
        finally:
            self._client.close()
            self._fail_pending()

    def _fail_pending(self) -> None:
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _QueueItem) and not item.future.done():
                item.future.set_exception(ConnectionError(f"controller channel to broker {self.node.id} shut down"))

    def _process(self, item: _QueueItem) -> None:
        first_send_ns = time.monotonic_ns()
        if self.queue_time_ms is not None:  # Kafka: requestRateAndQueueTimeMetrics.update(now - enqueueTimeMs)
            self.queue_time_ms.update((first_send_ns - item.enqueue_ns) / 1e6)
        api = API_NAMES.get(item.api_key, str(item.api_key))
        while True:
            if not self._running.is_set():
                item.future.set_exception(ConnectionError(f"controller channel to broker {self.node.id} shut down"))
                return
            if item.deadline_ns is not None and time.monotonic_ns() > item.deadline_ns:
                item.future.set_exception(
                    TimeoutError(f"no response from broker {self.node} for {api} within the deadline")
                )
                return
            try:
                if self._client.connect():
                    self._log.info(
                        f"Controller {self.manager.controller_id} connected to {self.node} for sending "
                        "state change requests"
                    )
            except ClientError as exc:
                self._log.warn(
                    f"Controller {self.manager.controller_id}'s connection to broker {self.node} was "
                    f"unsuccessful: {exc}"
                )
                self._backoff()
                continue
            correlation_id = next(self._correlation)
            try:
                if item.frame_template is not None:
                    frame = with_correlation_id(item.frame_template, correlation_id)
                else:
                    frame = self._client.encode(item.api_key, item.version, correlation_id, item.body)
                sent_ns = time.monotonic_ns()
                body = self._client.round_trip(item.api_key, item.version, correlation_id, frame)
            except ClientError as exc:  # the client closed the connection: the next attempt reconnects
                self._log.warn(
                    f"Controller {self.manager.controller_id} epoch {self.manager.controller_epoch} fails "
                    f"to send request (type={api}Request, version={item.version}, correlationId="
                    f"{correlation_id}) to broker {self.node}. Reconnecting to broker. ({exc})"
                )
                self._backoff()
                continue
            done_ns = time.monotonic_ns()
            response = ControlResponse(
                self.node,
                item.api_key,
                item.version,
                correlation_id,
                body,
                (first_send_ns - item.enqueue_ns) / 1e6,
                (done_ns - sent_ns) / 1e6,
            )
            sc = self.manager.state_change_logger()
            if sc.is_trace_enabled():
                # `$api` is Kafka's ApiKeys enum: its toString is the constant name (LEADER_AND_ISR), not `name`
                sc.trace(
                    f"Received response {response_to_kafka_string(item.api_key, body)} for request "
                    f"{ApiKey(item.api_key).name} with correlation id {correlation_id} sent to broker {self.node}"
                )
            if item.callback is not None:
                try:
                    item.callback(response)
                except Exception:  # a callback bug must not kill the send thread
                    self._log.error(f"Callback for {api} to broker {self.node.id} failed", exc_info=True)
            item.future.set_result(response)
            return

    def _backoff(self) -> None:
        self._stopped.wait(RETRY_BACKOFF_MS / 1000)  # returns early on shutdown


class ControllerChannelManager:
    """Per-broker send queues and threads of one controller.

    Args:
        controller_id: the controller's broker id (also the NetworkClient ``clientId``, as in Kafka).
        controller_epoch: the controller epoch written in the ``[Controller id=N epoch=E]`` prefix; settable.
        log4j: where controller.log (``kafka.controller.*``) and state-change.log lines go.
        request_timeout_ms: ``request.timeout.ms``: connect and response timeout of each attempt.
        registry: where to register ``kafka.controller:type=ControllerChannelManager`` ``TotalQueueSize`` and, per
            broker, ``QueueSize,broker-id=N`` and ``RequestRateAndQueueTimeMs,broker-id=N`` (optional).
    """

    def __init__(
        self,
        controller_id: int,
        controller_epoch: int,
        *,
        log4j: Log4j | None = None,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        registry: MetricsRegistry | None = None,
    ) -> None:
        if request_timeout_ms <= 0:
            raise ValueError("request_timeout_ms must be > 0")
        self.registry = registry
        if registry is not None:
            registry.gauge(
                MetricName.of(_METRIC_DOMAIN, _METRIC_TYPE, "TotalQueueSize"), lambda: float(self.total_queue_size())
            )
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self.client_id = controller_id
        self.request_timeout_ms = request_timeout_ms
        self.log4j = log4j or default_log4j()
        self._lock = threading.Lock()
        self._threads: dict[int, RequestSendThread] = {}

    def state_change_logger(self) -> KafkaLogger:
        """The controller's state-change logger with the current epoch in its prefix."""
        return self.log4j.get_logger(
            "state.change.logger", f"[Controller id={self.controller_id} epoch={self.controller_epoch}] "
        )

    def add_broker(self, node: BrokerNode) -> None:
        """Start a send thread for a broker (no-op when it is already there)."""
        with self._lock:
            if node.id in self._threads:
                return
            thread = RequestSendThread(self, node)
            self._threads[node.id] = thread
            if self.registry is not None:
                q = thread.queue
                self.registry.gauge(_broker_metric("QueueSize", node.id), lambda: float(q.qsize()))
                thread.queue_time_ms = self.registry.histogram(_broker_metric("RequestRateAndQueueTimeMs", node.id))
            thread.start()

    def remove_broker(self, broker_id: int, timeout_s: float = 5.0) -> None:
        """Stop a broker's send thread; its queued requests fail."""
        with self._lock:
            thread = self._threads.pop(broker_id, None)
        if thread is not None:
            thread.initiate_shutdown()
            thread.join(timeout_s)
            if self.registry is not None:
                self.registry.remove(_broker_metric("QueueSize", broker_id))
                self.registry.remove(_broker_metric("RequestRateAndQueueTimeMs", broker_id))

    def brokers(self) -> dict[int, BrokerNode]:
        """The brokers this channel sends to."""
        with self._lock:
            return {bid: t.node for bid, t in self._threads.items()}

    def send_request(
        self,
        broker_id: int,
        api_key: int,
        version: int,
        body: dict[str, Any],
        callback: Callable[[ControlResponse], None] | None = None,
        timeout_ms: int | None = None,
    ) -> Future[ControlResponse]:
        """Queue a request for a broker; the Future completes with its :class:`ControlResponse`.

        Args:
            timeout_ms: give up (TimeoutError) when no response arrived this long after queueing; None = retry
                until the broker is removed, as Kafka's controller does.

        Raises:
            KeyError: the broker was not added.
        """
        with self._lock:
            thread = self._threads.get(broker_id)
        if thread is None:
            raise KeyError(f"broker {broker_id} is not in the controller channel (add_broker first)")
        deadline = None if timeout_ms is None else time.monotonic_ns() + timeout_ms * 1_000_000
        item = _QueueItem(api_key, version, body, callback, deadline)
        thread.queue.put(item)
        return item.future

    def send_encoded(
        self,
        broker_ids: list[int],
        api_key: int,
        version: int,
        body: dict[str, Any],
        callback: Callable[[ControlResponse], None] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[int, Future[ControlResponse]]:
        """Serialize ``body`` once and queue the same bytes for every broker (correlation ids patched per send).

        Raises:
            KeyError: a broker was not added.
        """
        template = encode_request(api_key, version, 0, str(self.client_id), body)
        with self._lock:
            missing = [b for b in broker_ids if b not in self._threads]
            threads = [self._threads[b] for b in broker_ids if b in self._threads]
        if missing:
            raise KeyError(f"brokers {missing} are not in the controller channel (add_broker first)")
        deadline = None if timeout_ms is None else time.monotonic_ns() + timeout_ms * 1_000_000
        futures: dict[int, Future[ControlResponse]] = {}
        for thread in threads:
            item = _QueueItem(api_key, version, body, callback, deadline, template)
            thread.queue.put(item)
            futures[thread.node.id] = item.future
        return futures

    def queue_size(self, broker_id: int) -> int:
        """``kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=N``."""
        with self._lock:
            thread = self._threads.get(broker_id)
        return thread.queue.qsize() if thread is not None else 0

    def total_queue_size(self) -> int:
        """``kafka.controller:type=ControllerChannelManager,name=TotalQueueSize``."""
        with self._lock:
            threads = list(self._threads.values())
        return sum(t.queue.qsize() for t in threads)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop every send thread."""
        with self._lock:
            ids = list(self._threads)
        for bid in ids:
            self.remove_broker(bid, timeout_s)

    def __enter__(self) -> ControllerChannelManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
