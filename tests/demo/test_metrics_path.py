"""The demo's metrics through Prometheus: its discovery keeps Prometheus's targets from a run's cluster.json, a real
Prometheus scrapes the reference broker's exporter endpoint, and the pipeline's reader takes the samples as they are
scraped, each once, under the run's cluster and broker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.sources.prometheus_query import label_rules, rules_json
from jobs.sources.prometheus_server import PrometheusServerReader
from planewatch.demo.metrics_path import discovered, operator_prometheus, prometheus_name, prometheus_source
from planewatch.demo.shipping import pipeline_config
from planewatch.kafka.prometheus import ScrapeTarget
from tests.jobs.sources.scrape_helpers import reference_endpoint
from tests.polling import wait_until

# Prometheus scrapes this often here (operators: 15-60 s; the test waits for three scrapes).
SCRAPE_S = 1.0


def _cluster_json(path: Path, urls: dict[int, str], running: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"running": running, "brokers": [{"id": b, "prometheus": u} for b, u in urls.items()]}))
    return path


def test_discovery_reads_each_runs_cluster_json(tmp_path: Path) -> None:
    a = _cluster_json(tmp_path / "a" / "cluster.json", {1: "http://127.0.0.1:9404/metrics",
                                                        2: "http://127.0.0.1:9405/metrics"})
    b = _cluster_json(tmp_path / "b" / "cluster.json", {1: "http://127.0.0.1:9406/metrics"}, running=False)
    assert discovered({"run-a": a, "run-b": b, "run-c": tmp_path / "absent.json"}) == [
        ScrapeTarget("127.0.0.1:9404", "run-a", 1), ScrapeTarget("127.0.0.1:9405", "run-a", 2)]
    assert prometheus_name("run-a", "both") == "run-a-prom"
    assert prometheus_name("run-a", "prometheus") == "run-a"
    raw = pipeline_config(None, None, prometheus_source("http://127.0.0.1:9090"))
    assert raw == {"sources": {"prometheus_server": {"enabled": True, "url": "http://127.0.0.1:9090",
                                                     "mapping": ["labels"], "catch_up": "5 minutes"}}}


def _read(reader: PrometheusServerReader, start: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    end = reader.latestOffset(start, None)
    rows = [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
    reader.commit(end)
    return rows, end


@pytest.mark.integration
def test_prometheus_scrapes_the_run_and_the_reader_takes_each_sample_once(tmp_path: Path) -> None:
    with reference_endpoint() as ep:
        cj = _cluster_json(tmp_path / "run" / "cluster.json", {3: ep.url})
        with operator_prometheus(tmp_path / "prometheus", SCRAPE_S, {"demo-run": cj}) as prom:
            reader = PrometheusServerReader({"url": prom.url, "mapping": rules_json(label_rules(["labels"])),
                                             "catchups": "60"})
            start = reader.initialOffset()
            seen: list[dict[str, Any]] = []

            def three_scrapes() -> bool:
                nonlocal start
                rows, start = _read(reader, start)
                seen.extend(rows)
                return len({r["ingest_ts"] for r in seen}) >= 3

            wait_until(three_scrapes, 60, lambda: f"three scrapes read through Prometheus (read {len(seen)} rows)",
                       interval=0.5)
    lines = [r["line"] for r in seen]
    assert {(r["cluster"], r["broker_id"], r["kind"]) for r in seen} == {("demo-run", 3, "prometheus")}
    assert len(lines) == len(set(lines))  # each sample once (its timestamp in the line)
    queue = [line for line in lines if line.startswith("kafka_network_requestchannel_requestqueuesize ")]
    assert queue
    assert all(line.split()[1] == "3" for line in queue)
    # the line carries the scrape's time, the target's labels left out
    ts_ms = int(queue[0].split()[2])
    assert abs(ts_ms / 1000 - time.time()) < 120
    assert not any('cluster="' in line or 'instance="' in line for line in lines)
