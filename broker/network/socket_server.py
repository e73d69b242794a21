"""The socket server: acceptors, processors and request channels of the data and control planes.

Threading model (Kafka's ``SocketServer`` with KIP-291 and KIP-402)::

    data plane, per data listener L:     1 Acceptor  ->  num.network.threads Processors (queue of 20 new conns each)
                                          all data listeners share one RequestChannel(queued.max.requests)
                                          -> num.io.threads handler threads (KafkaServer)
    control plane (control.plane.listener.name set):
                                          1 Acceptor  ->  1 Processor  ->  RequestChannel(20)  ->  1 handler thread

Processor ids are global: data-plane processors first (listener by listener), the control-plane processor takes the
next id. Listeners are bound in the constructor (port 0 = an ephemeral port; :meth:`SocketServer.bound_port`), so
callers know the real ports before anything is started. :meth:`reconfigure` applies the dynamic connection limits
at run time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Final

from broker.config import ConfigException, EndPoint, KafkaConfig, parse_ip_overrides, parse_value
from broker.log4j import Log4j
from broker.metrics.registry import Meter, MetricName, MetricsRegistry
from broker.network.acceptor import Acceptor
from broker.network.channel import CONTROL_PLANE_QUEUE_SIZE, RequestChannel
from broker.network.processor import Processor
from broker.network.quotas import ConnectionQuotas
from broker.network.request_metrics import RequestMetrics

__all__ = ["CONTROL_PLANE", "DATA_PLANE", "SocketServer"]

DATA_PLANE: Final = "data-plane"
CONTROL_PLANE: Final = "control-plane"
# Kafka's dynamic listener/broker connection configs (DynamicListenerConfig / DynamicConnectionQuota).
DYNAMIC_KEYS: Final = frozenset({"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"})
_JOIN_TIMEOUT_S: Final = 10.0


class SocketServer:
    """Binds every listener and owns the network threads of both planes (see the module docstring)."""

    def __init__(
        self,
        config: KafkaConfig,
        registry: MetricsRegistry,
        log4j: Log4j,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.config = config
        self.registry = registry
        self._clock = clock
        # Kafka 2.8's log prefix (2.2-2.7: "[SocketServer brokerId=N] ").
        ident = f"[SocketServer listenerType=ZK_BROKER, nodeId={config.broker_id}] "
        self._log = log4j.get_logger("kafka.network.SocketServer", ident)
        self._acceptor_log = log4j.get_logger("kafka.network.Acceptor")
        self.request_metrics = RequestMetrics(registry)
        self.quotas = ConnectionQuotas(
            config["max.connections"],
            config["max.connections.per.ip"],
            config.max_connections_per_ip_overrides,
            config.inter_broker_listener_name,
            clock,
        )
        self.data_plane_channel = RequestChannel(config["queued.max.requests"], "", registry, clock)
        self.control_plane_channel: RequestChannel | None = (
            RequestChannel(CONTROL_PLANE_QUEUE_SIZE, "ControlPlane", registry, clock)
            if config.control_plane_listener_name
            else None
        )
        self.acceptors: dict[str, Acceptor] = {}
        self.processors: dict[str, list[Processor]] = {}
        self._data_processors: list[Processor] = []
        self._control_processor: Processor | None = None
        self._started = False
        self._stopped = False
        try:
            next_id = 0
            for ep in config.data_plane_listeners:
                next_id = self._create_plane(ep, DATA_PLANE, next_id, config["num.network.threads"], log4j)
            if config.control_plane_listener_name:
                ep = config.listener(config.control_plane_listener_name)
                self._create_plane(ep, CONTROL_PLANE, next_id, 1, log4j)
        except BaseException:
            self._close_unstarted()
            raise
        self._register_metrics()

    # -- construction --------------------------------------------------------------------------------------------
    def _create_plane(self, ep: EndPoint, plane: str, first_id: int, count: int, log4j: Log4j) -> int:
        control = plane == CONTROL_PLANE
        channel = self.control_plane_channel if control else self.data_plane_channel
        assert channel is not None
        self.quotas.add_listener(ep.name, self.config.max_connections_for(ep.name))
        procs: list[Processor] = []
        for pid in range(first_id, first_id + count):
            proc = Processor(
                pid, ep.name, ep.security_protocol,
                f"{plane}-kafka-network-thread-{self.config.broker_id}-ListenerName({ep.name})-{ep.security_protocol}-{pid}",
                channel, self.quotas, self.request_metrics, self.registry, log4j,
                self.config["socket.request.max.bytes"], self.config["connections.max.idle.ms"], self._clock,
            )
            channel.add_processor(proc)
            procs.append(proc)
        meter_name = "ControlPlaneAcceptorBlockedPercent" if control else "AcceptorBlockedPercent"
        meter = self.registry.meter(MetricName.of("kafka.network", "Acceptor", meter_name, listener=ep.name), 1.0)
        self.processors[ep.name] = procs
        if control:
            self._control_processor = procs[0]
        else:
            self._data_processors.extend(procs)
        acceptor = Acceptor(
            ep.name, ep.host, ep.port, procs, self.quotas, meter,
            f"{plane}-kafka-socket-acceptor-ListenerName({ep.name})-{ep.security_protocol}",
            log4j, self._clock,
        )
        # Kafka names the thread after the endpoint's port; with port 0 that is the port actually bound.
        acceptor.name += f"-{acceptor.bound_port}"
        self.acceptors[ep.name] = acceptor
        kind = "control-plane acceptor and processor" if control else "data-plane acceptor and processors"
        self._log.info(f"Created {kind} for endpoint : ListenerName({ep.name})")
        return first_id + count

    def _register_metrics(self) -> None:
        net = "kafka.network"

        def avg_idle(procs: list[Processor]) -> Callable[[], float]:
            # A processor whose first select has not returned yet measured nothing (NaN): it is left out of the
            # average rather than turning the whole gauge NaN; NaN only while no processor has measured anything.
            def value() -> float:
                measured = [r for r in (p.io_wait.ratio() for p in procs) if not math.isnan(r)]
                return sum(measured) / len(measured) if measured else math.nan

            return value

        data = list(self._data_processors)
        ctrl = [self._control_processor] if self._control_processor is not None else []
        self.registry.gauge(MetricName.of(net, "SocketServer", "NetworkProcessorAvgIdlePercent"), avg_idle(data))
        self.registry.gauge(
            MetricName.of(net, "SocketServer", "ControlPlaneNetworkProcessorAvgIdlePercent"), avg_idle(ctrl)
        )
        self.registry.gauge(MetricName.of(net, "SocketServer", "ExpiredConnectionsKilledCount"), lambda: 0.0)
        if ctrl:
            self.registry.gauge(
                MetricName.of(net, "SocketServer", "ControlPlaneExpiredConnectionsKilledCount"), lambda: 0.0
            )

    def _close_unstarted(self) -> None:
        for acceptor in self.acceptors.values():
            acceptor.server_socket.close()

    # -- public API ----------------------------------------------------------------------------------------------
    def bound_port(self, listener: str) -> int:
        """The port ``listener`` is bound to (the real one when configured with port 0)."""
        return self.acceptors[listener].bound_port

    def bound_endpoints(self) -> list[EndPoint]:
        """Every listener with its real port, in ``listeners`` order."""
        return [
            EndPoint(ep.name, ep.host, self.bound_port(ep.name), ep.security_protocol) for ep in self.config.listeners
        ]

    def plane_of(self, listener: str) -> str:
        return CONTROL_PLANE if listener == self.config.control_plane_listener_name else DATA_PLANE

    def acceptor_blocked_meter(self, listener: str) -> Meter:
        control = self.plane_of(listener) == CONTROL_PLANE
        name = "ControlPlaneAcceptorBlockedPercent" if control else "AcceptorBlockedPercent"
        return self.registry.meter(MetricName.of("kafka.network", "Acceptor", name, listener=listener), 1.0)

    def connection_count(self) -> int:
        """Connections registered with every processor (what the server is serving now)."""
        return sum(p.connection_count() for procs in self.processors.values() for p in procs)

    def start(self) -> None:
        """Start processors then acceptors, control plane first (Kafka's ``startup``)."""
        planes = sorted(self.acceptors, key=lambda name: self.plane_of(name) != CONTROL_PLANE)
        for name in planes:
            for proc in self.processors[name]:
                proc.start()
            acceptor = self.acceptors[name]
            acceptor.start()
            ep = self.config.listener(name)
            self._acceptor_log.info(f"Awaiting socket connections on {ep.host or '0.0.0.0'}:{acceptor.bound_port}.")
            kind = "control-plane acceptor and processor" if self.plane_of(name) == CONTROL_PLANE else \
                "data-plane acceptor and processor(s)"
            self._log.info(f"Started {kind} for endpoint : ListenerName({name})")
        self._started = True
        self._log.info("Started socket server acceptors and processors")

    def stop_processing_requests(self) -> None:
        """Stop acceptors and processors (connections are closed); handler pools are shut down by the caller."""
        if self._stopped:
            return
        self._stopped = True
        self._log.info("Stopping socket server request processors")
        for acceptor in self.acceptors.values():
            acceptor.shutdown()
        for procs in self.processors.values():
            for proc in procs:
                proc.shutdown()
        for acceptor in self.acceptors.values():
            if acceptor.is_alive():
                acceptor.join(_JOIN_TIMEOUT_S)
            else:
                acceptor.server_socket.close()
        for procs in self.processors.values():
            for proc in procs:
                if proc.is_alive():
                    proc.join(_JOIN_TIMEOUT_S)
                elif proc.ident is None:
                    proc.close_unstarted()  # never started (failed start-up): release its sockets here
        self.data_plane_channel.clear()
        if self.control_plane_channel is not None:
            self.control_plane_channel.clear()
        self._log.info("Stopped socket server request processors")

    def shutdown(self) -> None:
        """Stop everything (idempotent)."""
        self._log.info("Shutting down socket server")
        self.stop_processing_requests()
        self._log.info("Shutdown completed")

    def reconfigure(self, updates: Mapping[str, str]) -> None:
        """Apply dynamic connection limits at run time (Kafka's DynamicConnectionQuota / DynamicListenerConfig).

        Accepts ``max.connections``, ``max.connections.per.ip``, ``max.connections.per.ip.overrides`` and
        ``listener.name.<l>.max.connections``; thread-safe; validates everything before applying anything.

        Raises:
            ConfigException: a key that is not dynamically updatable, or an invalid value.
        """
        broker: dict[str, object] = {}
        listener_max: dict[str, int] = {}
        for key, raw in updates.items():
            if key in DYNAMIC_KEYS:
                broker[key] = parse_value(key, raw)
            elif key.startswith("listener.name.") and key.endswith(".max.connections"):
                listener = key[len("listener.name."): -len(".max.connections")].upper()
                if listener not in self.acceptors:
                    raise ConfigException(f"Cannot update {key}: listener {listener} is not configured")
                listener_max[listener] = int(parse_value(key, raw, "max.connections"))
            else:
                raise ConfigException(f"Cannot update these configs dynamically: Set({key})")
        overrides = (
            parse_ip_overrides(str(broker["max.connections.per.ip.overrides"]))
            if "max.connections.per.ip.overrides" in broker
            else None
        )
        per_ip = broker.get("max.connections.per.ip")
        total = broker.get("max.connections")
        self.quotas.update(
            max_connections=None if total is None else int(str(total)),
            max_connections_per_ip=None if per_ip is None else int(str(per_ip)),
            per_ip_overrides=overrides,
            listener_max=listener_max or None,
        )
        self._log.info(f"Updated connection limits: {dict(updates)}")
