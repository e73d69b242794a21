"""Request handler threads (Kafka's ``KafkaRequestHandlerPool``).

Each thread polls its plane's RequestChannel for up to :data:`POLL_TIMEOUT_S`, marks the time it waited on the
pool's idle meter divided by the pool size (so the meter's rate is the pool's average idle fraction:
``kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent``, control plane
``ControlPlaneRequestHandlerAvgIdlePercent``), sets ``dequeue_ns``, calls ``apis.handle`` and routes the response
back. An exception from ``handle`` is logged and answered by closing that connection; the thread lives on.
A :class:`~broker.network.channel.ShutdownRequest` ends one thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from broker.log4j import Log4j
from broker.metrics.registry import Meter
from broker.network.channel import RequestChannel, ShutdownRequest
from broker.network.request import RequestHandlerApi, Response
from broker.protocol import API_NAMES

__all__ = ["KafkaRequestHandlerPool"]

# Kafka's handlers poll the request queue with a 300 ms timeout.
POLL_TIMEOUT_S: Final = 0.3


class KafkaRequestHandlerPool:
    """``num_threads`` handler threads for one plane."""

    def __init__(
        self,
        broker_id: int,
        channel: RequestChannel,
        apis: RequestHandlerApi,
        num_threads: int,
        idle_meter: Meter,
        name_prefix: str,
        log4j: Log4j,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._channel = channel
        self._apis = apis
        self._meter = idle_meter
        self._clock = clock
        self._prefix = name_prefix
        self._log = log4j.get_logger("kafka.server.KafkaRequestHandler")
        self._pool_log = log4j.get_logger(
            "kafka.server.KafkaRequestHandlerPool", f"[{name_prefix} Kafka Request Handler on Broker {broker_id}], "
        )
        self._threads = [
            threading.Thread(target=self._run, args=(i, num_threads), name=f"{name_prefix}-kafka-request-handler-{i}",
                             daemon=True)
            for i in range(num_threads)
        ]

    @property
    def num_threads(self) -> int:
        return len(self._threads)

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _run(self, index: int, total: int) -> None:
        log = self._log.with_ident(f"[Kafka Request Handler {index} on Broker] ")
        while True:
            start = self._clock()
            request = self._channel.receive_request(POLL_TIMEOUT_S)
            now = self._clock()
            self._meter.mark((now - start) / total)
            if request is None:
                continue
            if isinstance(request, ShutdownRequest):
                return
            request.dequeue_ns = now
            try:
                response = self._apis.handle(request)
            except Exception:
                log.error(
                    f"Exception when handling request {request.header} from connection {request.connection_id}",
                    exc_info=True,
                )
                response = Response(None, close=True,
                                    metric_name=API_NAMES.get(request.header.api_key, str(request.header.api_key)))
            if not request.api_local_complete_ns:  # a delayed Produce/Fetch set it when it parked (RemoteTimeMs)
                request.api_local_complete_ns = self._clock()
            self._channel.send_response(request, response)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """One poison pill per thread, then join them (Kafka's ``KafkaRequestHandlerPool.shutdown``)."""
        self._pool_log.info("shutting down")
        for t in self._threads:
            if t.is_alive():
                self._channel.send_shutdown_request()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            if t.is_alive():
                t.join(max(0.0, deadline - time.monotonic()))
        self._pool_log.info("shut down completely")
