"""`planewatch roll` on Apache Kafka 4.4.0 (KRaft, three controllers) under acks=all load, as `planewatch scenario
rolling-restart-driven` runs it: every node restarted once, the brokers first, then the controllers with the quorum
leader last, each after a safe verdict; no produce error, no partition offline or under min.insync.replicas, nothing
lost. (ZooKeeper mode on 3.9.1: the order with the controller last is tests/pipelines/test_restart_probe.py's, the
Admin API's lists and the roll that stops at an unsafe gate tests/kafka/test_restart_probe.py's; `make demo` runs the
3.9.1 roll end to end: the suite's budget holds one six-restart roll.)

Meanwhile an operator's Prometheus (Debian's) scrapes every node's JMX exporter at an operator's interval (15 s),
its targets kept from the cluster.json through the restarts' new ports; the pipeline's reader of that Prometheus
(planewatch_prometheus_server) then takes every node's series, each sample once, and sees the roll in them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobs.sources.prometheus_query import label_rules, rules_json
from jobs.sources.prometheus_server import PrometheusServerReader
from planewatch.demo.metrics_path import operator_prometheus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(720)]

PLANEWATCH = Path(sys.executable).with_name("planewatch")
# the scenario's bound: cluster start, 20 s of settling, six restarts with their gates, cluster stop
SCENARIO_TIMEOUT_S = 600
# Prometheus scrapes the exporters at these intervals (operators use 15-60 s)
SCRAPE_S = {"4.4.0": 15.0}
# a restarted node's new port reaches Prometheus's targets within this (cluster.json rewritten, file_sd's watch)
DISCOVERY_MS = 10_000
# the reader's window: the whole run (the roll lasts minutes)
READ_BACK_S = "1800"


def _read_all(url: str) -> list[dict[str, Any]]:
    """Every record planewatch_prometheus_server reads of the run, batch by batch until nothing is new."""
    reader = PrometheusServerReader({"url": url, "mapping": rules_json(label_rules(["labels"])),
                                     "catchups": READ_BACK_S})
    start: dict[str, Any] = reader.initialOffset()
    rows: list[dict[str, Any]] = []
    for _ in range(10):
        end = reader.latestOffset(start, None)
        if end == start:
            return rows
        rows += [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
        reader.commit(end)
        start = end
    raise AssertionError("still reading after 10 windows")


def _timeline(version: str, d: Path) -> list[dict[str, Any]]:
    done = subprocess.run([str(PLANEWATCH), "scenario", "rolling-restart-driven", "--kafka", version, "--dir", str(d)],
                          capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _one(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (hit,) = [e for e in events if e["event"] == name]
    return hit


@pytest.mark.parametrize("version", ["4.4.0"])
def test_planewatch_roll_restarts_every_node_with_no_produce_error_and_no_partition_offline(
        version: str, tmp_path: Path) -> None:
    cluster_json = tmp_path / "roll" / "cluster" / "cluster.json"
    with operator_prometheus(tmp_path / "prometheus", SCRAPE_S[version], {"roll": cluster_json}) as prom:
        events = _timeline(version, tmp_path / "roll")
        scraped = _read_all(prom.url)
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
    # the roll through Prometheus: every node's series, each sample once, followed through its restart (a new port:
    # the targets kept from cluster.json) to samples after it
    lines = [(r["broker_id"], r["line"]) for r in scraped if r["kind"] == "prometheus"]
    assert len(lines) == len(set(lines))
    assert {r["cluster"] for r in scraped} == {"roll"}
    assert {b for b, _ in lines} == set(plan["order"])
    # (a node restarted less than a scrape interval and its new target's discovery before its cluster stopped may
    # stop before Prometheus scrapes its new port: the interval's phase is Prometheus's own)
    ended = _one(events, "cluster-stopped")["ts_ms"]
    followed = [(e["node"], e["ts_ms"]) for e in events if e["event"] == "roll-restarted"
                and ended - e["ts_ms"] > SCRAPE_S[version] * 1000 + DISCOVERY_MS]
    assert followed, "no restart early enough in the roll to be followed"
    for node, at in followed:
        assert any(b == node and int(line.split()[-1]) > at for b, line in lines), node
