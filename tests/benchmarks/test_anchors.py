"""The anchors of benchmarks.versus_prometheus: the rule files load, one fires through Prometheus and Alertmanager
on a synthetic endpoint, and the scoring sets anchor and planewatch detections side by side."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from benchmarks.anchors.score import AnchorAlert, noisy_rules, rows_of
from benchmarks.anchors.stacks import ANCHORS_DIR, STACKS, Target, file_sd, scrape_targets
from tests.polling import wait_until

# The anchor rule that fires on the synthetic endpoint: Strimzi's, `for: 10s`.
STRIMZI = next(s for s in STACKS if s.name == "strimzi")
# Scrape and evaluate every second in the test (the stacks' own intervals are 15-60 s).
TEST_INTERVAL_S = 1.0
# `for: 10s` plus scrapes, evaluations and Alertmanager's intake on a loaded machine.
FIRE_TIMEOUT_S = 60.0
POLL_S = 0.2
needs_prometheus = pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("promtool")),
                                      reason="Prometheus is not installed (scripts/bootstrap.sh installs it)")


def test_every_rule_file_belongs_to_a_stack() -> None:
    assert sorted(p.name for p in ANCHORS_DIR.glob("*.yml")) == sorted(s.rules.name for s in STACKS)


@needs_prometheus
@pytest.mark.parametrize("stack", STACKS, ids=lambda s: s.name)
def test_promtool_checks_the_rule_file(stack) -> None:
    out = subprocess.run(["promtool", "check", "rules", str(stack.rules)], capture_output=True, text=True,
                         timeout=30, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_targets_and_labels_of_a_cluster_json() -> None:
    cluster = {"brokers": [{"id": 1, "prometheus": "http://127.0.0.1:9404/metrics"}, {"id": 2, "prometheus": None}],
               "controllers": [{"id": 100, "prometheus": "http://127.0.0.1:9500/metrics"}]}
    targets = scrape_targets(cluster)
    assert targets == [Target("127.0.0.1:9404", 1, "broker"), Target("127.0.0.1:9500", 100, "controller")]
    assert file_sd(STRIMZI, "run-a", targets[:1]) == [{"targets": ["127.0.0.1:9404"], "labels": {
        "namespace": "run-a", "kubernetes_namespace": "run-a", "strimzi_io_name": "run-a", "pod": "run-a-kafka-1",
        "kubernetes_pod_name": "run-a-kafka-1"}}]
    by_name = {s.name: s for s in STACKS}
    assert by_name["confluent"].target_labels("run-a", targets[0]) == {"env": "run-a", "hostname": "127.0.0.1"}
    assert by_name["grafana-mixin"].target_labels("run-a", targets[0]) == {"kafka_cluster": "run-a"}


def _incident(run: str, event: str, ts_ms: int, alert_type: str, seen_ms: int | None) -> dict[str, object]:
    alert = None if seen_ms is None else {"type": alert_type, "seen_ms": seen_ms}
    return {"run": run, "event": event, "ts_ms": ts_ms, "alert_type": alert_type, "engine": "reference",
            "alert": alert}


def test_rows_pair_the_earliest_detections_and_leave_out_noise() -> None:
    report = {"incidents": [
        _incident("bounce", "killed", 100_000, "DELAYED_LEADER_AND_ISR", 109_000),
        _incident("bounce", "killed", 100_000, "STALE_BROKER_EPOCH", 104_000),
        _incident("storm", "storm-started", 200_000, "ACCEPTOR_BLOCKED", None),
    ]}
    alerts = [
        AnchorAlert("strimzi", "UnderReplicatedPartitions", "bounce", 95_000, 96_000),  # before the marker
        AnchorAlert("strimzi", "UnderReplicatedPartitions", "bounce", 150_000, 151_000),
        AnchorAlert("confluent", "Broker IO Activity < 0.4", "bounce", 120_000, 121_000),  # noise: fires when healthy
        AnchorAlert("confluent", "Broker IO Activity < 0.4", "healthy", 20_000, 21_000),
    ]
    noisy = noisy_rules(alerts, {"healthy"})
    assert noisy == {"confluent: Broker IO Activity < 0.4"}
    bounce, storm = rows_of(report, alerts, noisy, {"bounce": 130_000})
    assert (bounce.planewatch, bounce.planewatch_s) == ("STALE_BROKER_EPOCH", 4.0)
    assert bounce.anchor == alerts[1]
    assert bounce.anchor_s == 51.0
    assert bounce.ratio == pytest.approx(51.0 / 4.0)
    assert bounce.window_s == 30.0
    assert (storm.planewatch, storm.anchor, storm.ratio, storm.window_s) == (None, None, None, None)


class _Metrics(http.server.BaseHTTPRequestHandler):
    body = b"# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\n" \
           b"kafka_server_replicamanager_underreplicatedpartitions 2.0\n"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.mark.integration
@needs_prometheus
@pytest.mark.skipif(not (shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")),
                    reason="Alertmanager is not installed (scripts/bootstrap.sh installs it)")
def test_an_anchor_rule_fires_on_a_synthetic_endpoint(endpoint: str) -> None:
    from benchmarks.anchors.servers import AnchorServers
    from benchmarks.anchors.watch import AlertmanagerWatcher

    with AnchorServers([STRIMZI], scrape_interval_s=TEST_INTERVAL_S,
                       evaluation_interval_s=TEST_INTERVAL_S) as servers:
        watcher = AlertmanagerWatcher(servers.alertmanager_url, [STRIMZI])
        watcher.start()
        try:
            exposed_ms = int(time.time() * 1000)
            servers.set_targets("synthetic", [Target(endpoint, 1, "broker")])
            fired: list[AnchorAlert] = wait_until(
                lambda: [a for a in watcher.alerts() if a.rule == "UnderReplicatedPartitions"], FIRE_TIMEOUT_S,
                lambda: f"the UnderReplicatedPartitions alert (watcher: {watcher.last_error})", interval=POLL_S)
        finally:
            watcher.stop()
    assert fired
    alert = fired[0]
    assert (alert.stack, alert.run) == ("strimzi", "synthetic")
    assert alert.starts_ms - exposed_ms >= 10_000  # `for: 10s` held before it fired
    assert alert.seen_ms >= alert.starts_ms
