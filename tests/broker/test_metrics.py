"""broker.metrics: Yammer-like metric maths, Kafka MBean names, jmx_exporter names, JSON-lines and Prometheus output."""

from __future__ import annotations

import json
import math
import random
import urllib.request
from pathlib import Path

import pytest

from broker.metrics.prometheus import PrometheusServer, prometheus_name, render
from broker.metrics.registry import Gauge, Histogram, Meter, MetricName, MetricsRegistry
from broker.metrics.reporter import JsonLinesReporter, format_samples

SEC = 1_000_000_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_meter_rates_follow_yammer_ewma() -> None:
    clock = FakeClock()
    m = Meter(clock=clock)
    m.mark(100)
    clock.now = 5 * SEC  # one tick: the first tick sets the rate to the instant rate
    assert m.rate(1) == pytest.approx(20.0)
    assert m.rate(15) == pytest.approx(20.0)
    clock.now = 10 * SEC  # a tick with no events decays by alpha
    alpha1 = 1 - math.exp(-5 / 60)
    assert m.rate(1) == pytest.approx(20.0 * (1 - alpha1))
    assert m.mean_rate() == pytest.approx(10.0)
    assert m.attributes()["Count"] == 100


def test_nanosecond_meter_reads_as_a_fraction() -> None:
    clock = FakeClock()
    m = Meter(rate_unit_ns=1.0, clock=clock)
    clock.now = 2 * SEC
    m.mark(0.5 * SEC)  # blocked half of the first second ...
    m.mark(0.5 * SEC)  # ... and of the second
    assert m.mean_rate() == pytest.approx(0.5)
    clock.now = 5 * SEC
    assert m.rate(1) == pytest.approx(0.2)  # 1 s of 5 s


def test_histogram_exact_stats_and_yammer_percentiles() -> None:
    h = Histogram()
    for v in range(1, 101):
        h.update(float(v))
    a = h.attributes()
    assert a["Count"] == 100
    assert (a["Min"], a["Max"], a["Mean"]) == (1.0, 100.0, 50.5)
    assert a["StdDev"] == pytest.approx(29.011, abs=1e-3)
    assert a["50thPercentile"] == pytest.approx(50.5)  # position 0.5 * 101 = 50.5
    assert a["99thPercentile"] == pytest.approx(99.99)
    assert a["999thPercentile"] == 100.0
    assert set(a) == {"Count", "Min", "Max", "Mean", "StdDev", "50thPercentile", "75thPercentile",
                      "95thPercentile", "98thPercentile", "99thPercentile", "999thPercentile"}


def test_histogram_reservoir_is_bounded_and_representative() -> None:
    h = Histogram(reservoir_size=200, rng=random.Random(7))
    for v in range(20_000):
        h.update(float(v))
    assert h.count == 20_000
    assert len(h._values) == 200
    assert 7_000 < h.percentile(0.5) < 13_000  # a uniform sample of a uniform stream
    assert h.attributes()["Max"] == 19_999.0


def test_registry_get_or_create_shares_and_checks_kinds() -> None:
    reg = MetricsRegistry()
    name = MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr")
    assert name.mbean == "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=LeaderAndIsr"
    assert reg.histogram(name) is reg.histogram(name)  # both planes share one histogram, as in Kafka
    with pytest.raises(TypeError):
        reg.meter(name)
    g = reg.gauge(MetricName.of("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"), lambda: 1 / 0)
    assert math.isnan(g.value())  # a failing gauge reads NaN, never kills a reporter
    sock = MetricName("kafka.server", "socket-server-metrics", "", (("listener", "P"), ("networkProcessor", "0")))
    assert sock.mbean == "kafka.server:type=socket-server-metrics,listener=P,networkProcessor=0"
    reg.gauge(sock, lambda: 3, "connection-count")
    reg.gauge(sock, lambda: 0.25, "io-wait-ratio")
    metric = reg.get(sock.mbean)
    assert isinstance(metric, Gauge)
    assert metric.attributes() == {"connection-count": 3.0, "io-wait-ratio": 0.25}


# FACTS.md section 3, column prometheus/jmx_exporter examples/kafka-2_0_0.yml
@pytest.mark.parametrize(
    ("name", "attribute", "expected"),
    [
        (MetricName.of("kafka.network", "RequestChannel", "RequestQueueSize"), "Value",
         ("kafka_network_requestchannel_requestqueuesize", {})),
        (MetricName.of("kafka.network", "RequestChannel", "ControlPlaneRequestQueueSize"), "Value",
         ("kafka_network_requestchannel_controlplanerequestqueuesize", {})),
        (MetricName.of("kafka.network", "RequestChannel", "ResponseQueueSize", processor=3), "Value",
         ("kafka_network_requestchannel_responsequeuesize", {"processor": "3"})),
        (MetricName.of("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"), "Value",
         ("kafka_network_socketserver_networkprocessoravgidlepercent", {})),
        (MetricName.of("kafka.network", "SocketServer", "ControlPlaneNetworkProcessorAvgIdlePercent"), "Value",
         ("kafka_network_socketserver_controlplanenetworkprocessoravgidlepercent", {})),
        (MetricName.of("kafka.network", "Processor", "IdlePercent", networkProcessor=2), "Value",
         ("kafka_network_processor_idlepercent", {"networkProcessor": "2"})),
        (MetricName.of("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), "MeanRate",
         ("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", {})),
        (MetricName.of("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), "OneMinuteRate",
         None),
        (MetricName.of("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), "Count",
         ("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count", {})),
        (MetricName.of("kafka.server", "KafkaRequestHandlerPool", "ControlPlaneRequestHandlerAvgIdlePercent"),
         "MeanRate", ("kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidle_percent", {})),
        (MetricName.of("kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT"), "Count",
         ("kafka_network_acceptor_acceptorblockedpercent_count", {"listener": "PLAINTEXT"})),
        (MetricName.of("kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT"), "MeanRate",
         None),
        (MetricName.of("kafka.network", "SocketServer", "ExpiredConnectionsKilledCount"), "Value",
         ("kafka_network_socketserver_expiredconnectionskilledcount", {})),
        (MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"), "99thPercentile",
         ("kafka_network_requestmetrics_totaltimems", {"request": "LeaderAndIsr", "quantile": "0.99"})),
        (MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"), "999thPercentile",
         ("kafka_network_requestmetrics_totaltimems", {"request": "LeaderAndIsr", "quantile": "0.999"})),
        (MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"), "50thPercentile",
         ("kafka_network_requestmetrics_totaltimems", {"request": "LeaderAndIsr", "quantile": "0.50"})),
        (MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"), "Count",
         ("kafka_network_requestmetrics_totaltimems_count", {"request": "LeaderAndIsr"})),
        (MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"), "Mean", None),
        (MetricName.of("kafka.network", "RequestMetrics", "RequestsPerSec", request="LeaderAndIsr", version=5),
         "Count", ("kafka_network_requestmetrics_requests_total", {"request": "LeaderAndIsr", "version": "5"})),
        (MetricName.of("kafka.network", "RequestMetrics", "ErrorsPerSec", request="LeaderAndIsr",
                       error="STALE_BROKER_EPOCH"), "Count",
         ("kafka_network_requestmetrics_errors_total", {"request": "LeaderAndIsr", "error": "STALE_BROKER_EPOCH"})),
        (MetricName("kafka.server", "socket-server-metrics", "", (("listener", "P"), ("networkProcessor", "0"))),
         "connection-count", None),
    ],
)
def test_jmx_exporter_kafka_2_0_0_names(
    name: MetricName, attribute: str, expected: tuple[str, dict[str, str]] | None
) -> None:
    got = prometheus_name(name, attribute)
    assert (None if got is None else (got[0], got[2])) == expected


def test_prometheus_endpoint_serves_the_registry() -> None:
    reg = MetricsRegistry()
    reg.gauge(MetricName.of("kafka.network", "RequestChannel", "ControlPlaneRequestQueueSize"), lambda: 4)
    h = reg.histogram(MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", request="LeaderAndIsr"))
    h.update(2.0)
    server = PrometheusServer(reg, 0)
    server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as resp:
            body = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    finally:
        server.shutdown()
    assert "kafka_network_requestchannel_controlplanerequestqueuesize 4.0\n" in body
    assert 'kafka_network_requestmetrics_totaltimems{request="LeaderAndIsr",quantile="0.99"} 2.0' in body
    assert 'kafka_network_requestmetrics_totaltimems_count{request="LeaderAndIsr"} 1.0' in body
    assert "# TYPE kafka_network_requestmetrics_totaltimems_count counter" in body
    assert body == render(reg)


def test_json_lines_reporter_writes_rolls_and_nulls_nan(tmp_path: Path) -> None:
    reg = MetricsRegistry()
    reg.gauge(MetricName.of("kafka.network", "SocketServer", "ControlPlaneNetworkProcessorAvgIdlePercent"),
              lambda: float("nan"))
    reg.meter(MetricName.of("kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT"), 1.0)
    wall = [1_700_000_000.0]
    rep = JsonLinesReporter(reg, tmp_path, 7, 1000, roll_bytes=1024, roll_ms=3_600_000, wall_clock=lambda: wall[0])
    assert rep.report() == 6  # 1 gauge attribute + 5 meter attributes
    first = rep.current_file
    assert first is not None
    assert first.name == "metrics-1700000000000.jsonl"
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert rows[0] == {"ts": 1700000000000, "broker_id": 7,
                       "mbean": "kafka.network:type=SocketServer,name=ControlPlaneNetworkProcessorAvgIdlePercent",
                       "attribute": "Value", "value": None}
    assert {r["attribute"] for r in rows[1:]} == {"Count", "MeanRate", "OneMinuteRate", "FiveMinuteRate",
                                                  "FifteenMinuteRate"}
    for _ in range(3):  # > 1024 bytes: the next report starts a new file
        wall[0] += 1
        rep.report()
    rep.shutdown()
    files = sorted(tmp_path.glob("metrics-*.jsonl"))
    assert len(files) >= 2
    total = sum(len(f.read_text().splitlines()) for f in files)
    assert total == 6 * 5  # 4 reports + the final one at shutdown
    assert format_samples(reg, 7, 1)[0].startswith('{"ts":1,"broker_id":7,"mbean":"kafka.network:type=SocketServer')
