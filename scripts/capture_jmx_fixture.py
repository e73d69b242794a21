"""Capture a real Apache Kafka's JMX exporter answers during a scenario, as a test fixture.

Runs one scenario of :mod:`planewatch.kafka.scenarios` (default: the KIP-402 connection storm) on the jars fetched by
``python -m planewatch.kafka.artifacts``, scrapes every broker's JMX exporter agent every ``--interval`` seconds
with :func:`jobs.sources.scrape.scrape` (the pipeline's own scraper), and writes the samples of the metric families
planewatch reads, stamped with the scrape time (Prometheus text with timestamps), to ``OUT/broker-<id>.prom``, plus
a PROVENANCE file. Usage::

    python scripts/capture_jmx_fixture.py --version 3.9.1 --scenario connection_storm OUT
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from broker.scenarios.base import Timeline
from jobs.sources.scrape import scrape
from planewatch.kafka import scenarios

# The families kept: what the metric rules read (the rest of an answer is JVM and per-topic noise).
KEEP = ("kafka_network_acceptor_", "kafka_server_kafkarequesthandlerpool_", "kafka_network_socketserver_",
        "kafka_network_requestchannel_", "kafka_network_requestmetrics_")
# The control requests whose RequestMetrics are kept.
CONTROL = ('request="LeaderAndIsr"', 'request="UpdateMetadata"', 'request="StopReplica"')


def _keep(line: str) -> bool:
    if not line.startswith(KEEP):
        return False
    return not line.startswith("kafka_network_requestmetrics_") or any(c in line for c in CONTROL)


def _scraper(cluster_json: Path, out: Path, interval_s: float, stop: threading.Event) -> None:
    while not stop.is_set():
        if cluster_json.exists():
            try:
                brokers = json.loads(cluster_json.read_text()).get("brokers", [])
            except json.JSONDecodeError:
                brokers = []
            for b in brokers:
                url = b.get("prometheus")
                if not url:
                    continue
                got = scrape(url)
                if not got.ok:
                    continue
                lines = [f"{ln} {got.ts_ms}" for ln in got.data.decode().splitlines() if _keep(ln)]
                with (out / f"broker-{b['id']}.prom").open("a") as f:
                    f.write("\n".join(lines) + "\n")
        stop.wait(interval_s)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--version", default="3.9.1")
    p.add_argument("--scenario", default="connection_storm")
    p.add_argument("--interval", type=float, default=2.0)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        stop = threading.Event()
        t = threading.Thread(target=_scraper, args=(d / "cluster" / "cluster.json", a.out, a.interval, stop))
        t.start()
        tl = Timeline(a.scenario, a.out / "timeline.jsonl")
        try:
            getattr(scenarios, a.scenario)(d, tl, a.version)
        finally:
            stop.set()
            t.join()
    (a.out / "PROVENANCE").write_text(
        f"Apache Kafka {a.version}, scenario {a.scenario} (timeline.jsonl), JMX exporter agent answers scraped every "
        f"{a.interval} s by jobs.sources.scrape.scrape at {time.strftime('%Y-%m-%d')}; captured by "
        "scripts/capture_jmx_fixture.py: only the families planewatch reads (acceptor, request handler pool, socket "
        "server, request channel, RequestMetrics of the control requests), each sample stamped with its scrape time.\n")


if __name__ == "__main__":
    main()
