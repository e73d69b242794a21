"""`planewatch roll` on Apache Kafka 3.9.1 (ZooKeeper mode) and 4.4.0 (KRaft, three controllers) under acks=all
load, as `planewatch scenario rolling-restart-driven` runs it: every node restarted once, ZooKeeper's controller and
KRaft's quorum leader last, each after a safe verdict; no produce error, no partition offline or under
min.insync.replicas, nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(720)]

PLANEWATCH = Path(sys.executable).with_name("planewatch")
# the scenario's bound: cluster start, 20 s of settling, six restarts with their gates, cluster stop
SCENARIO_TIMEOUT_S = 600


def _timeline(version: str, d: Path) -> list[dict[str, Any]]:
    done = subprocess.run([str(PLANEWATCH), "scenario", "rolling-restart-driven", "--kafka", version, "--dir", str(d)],
                          capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _one(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (hit,) = [e for e in events if e["event"] == name]
    return hit


@pytest.mark.parametrize("version", ["3.9.1", "4.4.0"])
def test_planewatch_roll_restarts_every_node_with_no_produce_error_and_no_partition_offline(
        version: str, tmp_path: Path) -> None:
    events = _timeline(version, tmp_path / "roll")
    assert _one(events, "roll-driver-exited")["exit_status"] == 0
    plan = _one(events, "roll-plan")
    restarted = [e["node"] for e in events if e["event"] == "roll-restarted"]
    assert restarted == plan["order"]
    gates = [e for e in events if e["event"] == "roll-gate"]
    assert all(g["verdict"] != "unsafe" for g in gates)
    # every restart came after a safe verdict about that node
    for node in restarted:
        said = [g["verdict"] for g in gates if g["node"] == node]
        assert said[-1] == "safe", (node, said)
    if version.startswith("4."):
        assert plan["controllers"] == [100, 101, 102]
        assert restarted[:3] == [1, 2, 3]  # brokers first, then the controllers
        assert sorted(restarted[3:]) == [100, 101, 102]
    report = _one(events, "roll-finished")
    assert report["failed"] == 0, report["errors"]
    assert report["max_offline_partitions"] == 0
    assert report["under_min_isr_s_total"] == 0
    assert report["lost"] == 0
    assert report["acked"] > 0
