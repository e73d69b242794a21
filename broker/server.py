"""KafkaServer: wires configuration, logging, metrics, the socket server and the request handler pools.

Start-up order follows Kafka 2.8's ``KafkaServer.startup`` (the parts that exist here), after raising the
open-file soft limit to the hard limit (what Kafka's packaging has operators do; the segment-file descriptor pool is
sized from it, :mod:`broker.log.file_pool`): log4j appenders into
``kafka.logs.dir``, the config dump, the socket server (listeners bound, port 0 allowed), the request handlers
(``num.io.threads`` for the data plane, one for the control plane), the metrics reporters, then the processors and
acceptors start accepting. ``shutdown`` reverses it: acceptors and processors stop (connections closed), the
handler pools get their poison pills and are joined, reporters write a last sample, appenders are closed.

server.log lines (logger names in parentheses, as Kafka 2.8 writes them)::

    [KafkaServer id=1] starting (kafka.server.KafkaServer)
    KafkaConfig values: ... (kafka.server.KafkaConfig)
    [SocketServer listenerType=ZK_BROKER, nodeId=1] Created data-plane acceptor and processors for endpoint : ...
    Awaiting socket connections on 127.0.0.1:9092. (kafka.network.Acceptor)
    [KafkaServer id=1] started (kafka.server.KafkaServer)

The request handlers come from ``apis_factory(server)``, called once after the listeners are bound (so the real
ports are known); the same object serves both planes and must be thread-safe. The default factory builds
``broker.apis.KafkaApis`` over a fresh ``broker.state.BrokerState``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.config import KafkaConfig
from broker.log.file_pool import raise_open_file_limit
from broker.log4j import Log4j
from broker.metrics.prometheus import PrometheusServer
from broker.metrics.registry import MetricName, MetricsRegistry
from broker.metrics.reporter import JsonLinesReporter
from broker.network.handler import KafkaRequestHandlerPool
from broker.network.request import RequestHandlerApi
from broker.network.socket_server import CONTROL_PLANE, DATA_PLANE, SocketServer
from broker.settings import NetworkSettings, PlanewatchSettings

__all__ = ["ApisFactory", "BoundListener", "KafkaServer", "default_apis_factory"]

ApisFactory = Callable[["KafkaServer"], RequestHandlerApi]


@dataclass(frozen=True, slots=True)
class BoundListener:
    """A listener as bound: name, host, real port, plane ("data-plane" / "control-plane")."""

    name: str
    host: str
    port: int
    security_protocol: str
    plane: str


def default_apis_factory(server: KafkaServer) -> RequestHandlerApi:
    """``broker.apis.factory.build_kafka_apis``: KafkaApis over a new BrokerState (imported here: it is heavy)."""
    from broker.apis.factory import build_kafka_apis

    return build_kafka_apis(server)


class KafkaServer:
    """One reference broker.

    Args:
        config: the validated configuration.
        apis_factory: builds the request handler object (see the module docstring).
        log4j: a logging hierarchy to use as is; by default the server creates its own and configures Kafka's
            appenders into ``config.kafka_logs_dir``.
        clock: monotonic nanoseconds (injected for tests).
    """

    def __init__(
        self,
        config: KafkaConfig,
        apis_factory: ApisFactory | None = None,
        log4j: Log4j | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.config = config
        self._apis_factory = apis_factory or default_apis_factory
        self._own_log4j = log4j is None
        self.log4j = log4j or Log4j()
        self._clock = clock
        self.registry = MetricsRegistry(clock)
        self.socket_server: SocketServer | None = None
        self.apis: RequestHandlerApi | None = None
        self._pools: list[KafkaRequestHandlerPool] = []
        self._reporter: JsonLinesReporter | None = None
        self.prometheus: PrometheusServer | None = None
        self._log = self.log4j.get_logger("kafka.server.KafkaServer", f"[KafkaServer id={config.broker_id}] ")
        self._shutdown_lock = threading.Lock()
        self._started = False
        self._stopped = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def startup(self) -> None:
        """Bind, start every thread, and log Kafka's start-up lines. Raises OSError when a port cannot be bound."""
        cfg = self.config
        if self._own_log4j:
            own = PlanewatchSettings.from_config(cfg)
            self.log4j.configure(cfg.kafka_logs_dir, request_log_level=own.request_logger_level,
                                 state_change_level=own.state_change_logger_level)
        self._log.info("starting")
        # Kafka's app-info metrics (AppInfoParser.registerAppInfo): the broker's start, which tells its incarnations
        # apart and how young each is (detection leaves out a young broker's windowed ratios)
        started_ms = float(time.time_ns() // 1_000_000)
        self.registry.gauge(MetricName.of("kafka.server", "app-info", "", id=cfg.broker_id), lambda: started_ms,
                            "start-time-ms")
        before, after = raise_open_file_limit()
        if after != before:
            self._log.info(f"Raised the open-file soft limit from {before} to its hard limit {after} (planewatch)")
        config_log = self.log4j.get_logger("kafka.server.KafkaConfig")
        config_log.info("KafkaConfig values: \n" + "".join(f"\t{k} = {_java(v)}\n" for k, v in cfg.describe()))
        for key in cfg.unknown:
            config_log.warn(f"The configuration '{key}' was supplied but isn't a known config.")
        try:
            self.socket_server = SocketServer(cfg, self.registry, self.log4j, self._clock)
            self.apis = self._apis_factory(self)
            self._start_handlers(self.socket_server, self.apis)
            self._start_reporters()
            self.socket_server.start()
        except BaseException:
            self._log.error("Fatal error during KafkaServer startup. Prepare to shutdown", exc_info=True)
            self.shutdown()
            raise
        self._started = True
        self._log.info("started")

    def _start_handlers(self, server: SocketServer, apis: RequestHandlerApi) -> None:
        bid = self.config.broker_id
        data_meter = self.registry.meter(
            MetricName.of("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), 1.0
        )
        pool = KafkaRequestHandlerPool(
            bid, server.data_plane_channel, apis, NetworkSettings.from_config(self.config).num_io_threads, data_meter,
            DATA_PLANE,
            self.log4j, self._clock,
        )
        self._pools.append(pool)
        if server.control_plane_channel is not None:
            ctrl_meter = self.registry.meter(
                MetricName.of("kafka.server", "KafkaRequestHandlerPool", "ControlPlaneRequestHandlerAvgIdlePercent"),
                1.0,
            )
            self._pools.append(
                KafkaRequestHandlerPool(bid, server.control_plane_channel, apis, 1, ctrl_meter, CONTROL_PLANE,
                                        self.log4j, self._clock)
            )
        for p in self._pools:
            p.start()

    def _start_reporters(self) -> None:
        cfg = self.config
        metrics = PlanewatchSettings.from_config(cfg)
        self._reporter = JsonLinesReporter(
            self.registry, cfg.metrics_dir, cfg.broker_id, metrics.metrics_interval_ms,
            metrics.metrics_file_roll_bytes, metrics.metrics_file_roll_ms,
        )
        self._reporter.start()
        if metrics.prometheus_port:
            self.prometheus = PrometheusServer(self.registry, metrics.prometheus_port)
            self.prometheus.start()

    def shutdown(self) -> None:
        """Stop everything (idempotent, safe after a failed start-up)."""
        with self._shutdown_lock:
            if self._stopped.is_set():
                return
            self._log.info("shutting down")
            if self.socket_server is not None:
                self.socket_server.stop_processing_requests()
            for pool in self._pools:
                pool.shutdown()
            if self.socket_server is not None:
                self.socket_server.shutdown()
            if self.prometheus is not None:
                self.prometheus.shutdown()
            if self._reporter is not None:
                self._reporter.shutdown()
            closer = getattr(self.apis, "close", None)
            if callable(closer):
                closer()
            self._log.info("shut down completed")
            if self._own_log4j:
                self.log4j.close()
            self._stopped.set()

    def await_shutdown(self, timeout_s: float | None = None) -> bool:
        """Block until :meth:`shutdown` has completed; True when it has."""
        return self._stopped.wait(timeout_s)

    # -- what the server offers -----------------------------------------------------------------------------------
    def _server(self) -> SocketServer:
        if self.socket_server is None:
            raise RuntimeError("KafkaServer is not started")
        return self.socket_server

    def bound_port(self, listener: str) -> int:
        """The real port of ``listener``."""
        return self._server().bound_port(listener)

    def listeners(self) -> list[BoundListener]:
        """Every listener with its bound port and plane."""
        server = self._server()
        return [
            BoundListener(ep.name, ep.host, ep.port, ep.security_protocol, server.plane_of(ep.name))
            for ep in server.bound_endpoints()
        ]

    def advertised_listeners(self) -> list[BoundListener]:
        """``advertised.listeners`` with port 0 replaced by the bound port and an empty host by this host's name."""
        server = self._server()
        out = []
        for ep in self.config.advertised_listeners:
            port = ep.port or server.bound_port(ep.name)
            host = ep.host or socket.gethostname()
            out.append(BoundListener(ep.name, host, port, ep.security_protocol, server.plane_of(ep.name)))
        return out


def _java(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
