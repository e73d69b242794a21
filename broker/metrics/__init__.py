"""Kafka-named metrics: a Yammer-like registry, a JSON-lines reporter and a Prometheus endpoint.

Note on names: the KIP-402 wiki draft called the acceptor's meter ``AcceptorIdlePercent``; the name that shipped in
Kafka 2.2 (commit 4b29487, KAFKA-7719) and that this broker registers is
``kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=<L>`` (control plane:
``name=ControlPlaneAcceptorBlockedPercent``). It is a NANOSECONDS meter of the time the acceptor thread was blocked
(all processors' new-connection queues full, or waiting for a ``max.connections`` slot), so its MeanRate and
OneMinuteRate read as a fraction 0..1.

Modules: `prometheus` (Prometheus exposition with the names prometheus/jmx_exporter's `kafka-2_0_0.yml` rules...).
"""

from __future__ import annotations

from broker.metrics.registry import Gauge, Histogram, Meter, MetricName, MetricsRegistry

__all__ = ["Gauge", "Histogram", "Meter", "MetricName", "MetricsRegistry"]
