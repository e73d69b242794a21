"""KRaft on Apache Kafka 4.4: a broker paused past its session timeout is fenced by the active controller, and
planewatch's parser and log rules turn the controller's own controller.log into BROKER_FENCED on that broker."""

from __future__ import annotations

import signal
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.detection.config import DetectionConfig
from pipelines.detection.registry import log_candidates
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from schemas.tables import STATE_CHANGE_EVENTS
from tests.pipelines.parsing.parse_helpers import parse_all, raw_log
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# Kafka's broker.session.timeout.ms (9 s) plus the controller's fencing check (every 1,125 ms), on a loaded machine.
FENCED_WITHIN_S = 60.0
UNFENCED_WITHIN_S = 90.0


def _controller_log(cluster: KafkaCluster) -> Path:
    (node,) = cluster.controllers
    return cluster.controller_dir(node) / "logs" / "controller.log"


def _has(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text(errors="replace")


def test_a_paused_broker_is_fenced_and_the_controller_log_raises_broker_fenced(tmp_path: Path) -> None:
    cluster = KafkaCluster(KafkaClusterSpec(tmp_path / "c", "4.4.0", brokers=1, jmx_exporter=False))
    try:
        cluster.start()
        log = _controller_log(cluster)
        broker = cluster.brokers[1].popen
        broker.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: _has(log, "Fencing broker 1 "), FENCED_WITHIN_S, "broker 1 fenced")
        finally:
            broker.send_signal(signal.SIGCONT)
        wait_until(lambda: log.read_text().count("The request from broker 1 to unfence has been granted") >= 2,
                   UNFENCED_WITHIN_S, "broker 1 unfenced again")
    finally:
        cluster.stop()

    lines = log.read_text(errors="replace").splitlines()
    routed = parse_all([raw_log(line, i, "controller", None) for i, line in enumerate(lines)])
    rows = [row for route, row in routed if route == "state_change"]
    fenced = [r for r in rows if r["event"] == "kraft_broker_fenced"]
    assert [(r["target_broker_id"], r["controller_id"]) for r in fenced] == [(1, 100)]
    assert fenced[0]["broker_epoch"] is not None  # 4.x names the fenced registration's epoch
    silver = pa.Table.from_pylist(rows, schema=STATE_CHANGE_EVENTS.to_arrow())
    (hit,) = log_candidates(silver, None, DetectionConfig())
    assert (hit["type"], hit["broker_id"], hit["severity"]) == ("BROKER_FENCED", 1, "critical")
    assert "it was unfenced again since" in hit["summary"]
