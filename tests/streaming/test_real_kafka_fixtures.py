"""The pipeline over what Apache Kafka itself wrote (tests/fixtures/kafka/<run>/, captured from `planewatch scenario
--kafka` runs by scripts/capture_kafka_fixture.py; PROVENANCE in each names the version and the run).

Every record lands in bronze; no line of Kafka's own state-change, controller or request logs is quarantined (one
would be a parser bug); every LeaderAndIsr Kafka's INFO summary says it handled pairs to a completed latency row
(StopReplica has no Finished line: a StopReplica a broker got while it shut down stays in flight, rightly); the
incident each run injected raises its alert and the healthy run raises none. All runs go through one pipeline run,
each its own cluster.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
from tests.lake_helpers import lake_rows, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "kafka"
_START = re.compile(rb"^\[\d{4}-\d\d-\d\d ")
_HANDLING = re.compile(r"\[Broker id=(\d+)\] Handling (LeaderAndIsr) request correlationId (\d+) "
                       r"from controller (\d+) for \d+ partitions")
# run -> (alert types that must fire, whether any other alert type may fire)
EXPECTED = {
    "kafka-3.9.1-produce-backlog-without-control-plane": ({"CONTROL_REQUEST_QUEUED_BEHIND_DATA"}, True),
    "kafka-2.8.2-healthy": (set(), False),
}


def _rows(lake: Path, table: str) -> list[dict]:
    try:
        return lake_rows(lake, table)
    except Exception:
        return []


def _records(files: list[Path]) -> int:
    """log4j records: lines that start with a timestamp (continuation lines join the record before them)."""
    return sum(1 for f in files for line in f.read_bytes().split(b"\n") if _START.match(line))


def test_apache_kafkas_own_lines_parse_pair_and_alert(spark, tmp_path: Path) -> None:
    for run in EXPECTED:
        shutil.copytree(FIXTURES / run / "cluster", tmp_path / "input" / run)
    settings = pipeline_settings(tmp_path, files=tmp_path / "input", quality={"sample_limit": 100})
    assert run_pipeline(spark, settings, families=("logs",), detection=True) == 0
    lake = tmp_path / "lake"
    raw = _rows(lake, "raw_logs")
    bad = [(r["source"], r["reason"], r["record"][:120]) for r in _rows(lake, "quarantine")]
    assert bad == []
    latency = _rows(lake, "control_request_latency")
    alerts = _rows(lake, "alerts")
    for run, (must, others_ok) in EXPECTED.items():
        files = sorted((tmp_path / "input" / run).rglob("*.log"))
        assert len([r for r in raw if r["cluster"] == run]) == _records(files), run
        handled = {(int(m[1]), m[2], int(m[3]), int(m[4])) for f in files if f.name == "state-change.log"
                   for m in _HANDLING.finditer(f.read_text())}
        assert handled, run
        completed = {(r["broker_id"], r["request"], r["correlation_id"], r["controller_id"]) for r in latency
                     if r["cluster"] == run and r["status"] == "completed"}
        assert handled <= completed, (run, sorted(handled - completed)[:5])
        fired = {a["type"] for a in alerts if a["cluster"] == run}
        assert must <= fired, run
        if not others_ok:
            assert fired == must, run
