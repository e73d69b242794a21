"""What keeping shipped records once costs: the Kafka log query with and without its de-duplication.

    .venv/bin/python -m benchmarks.dedup_cost [--records 6000] [--batch 500] [--rounds 2]

Starts one Apache Kafka 3.9.1 broker, produces `--records` rsyslog-envelope records (each its own origin) into a
3-partition topic, then runs the log pipeline over it (`--once`, detection on, batches of `--batch` records) with
`sources.kafka.logs_dedup_horizon` at 15 minutes (jobs.sources.dedup: Spark's dropDuplicatesWithinWatermark, RocksDB
state committed as a changelog per batch, jobs.run.session.STATE_STORE_CONF), at 15 minutes with a RocksDB
checkpoint per batch (Spark's default), and at 0 (off), in turn `--rounds` times each, in one Spark session. Prints per
run the batches, the whole run, and the median batch read (the Spark job that reads, de-duplicates and collects a
batch) and batch. What a user would use instead is no de-duplication: a shipper's re-sent lines stored twice.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from benchmarks.batch_reports import parse_all
from jobs.run.runner import run_pipeline
from jobs.run.session import CHANGELOG_CHECKPOINTING, build_session
from jobs.run.settings import Settings, parse_settings
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec

TOPIC = "shipped"
# (what the run is, its horizon, its state commits as a changelog)
VARIANTS = (("dedup, changelog", "15 minutes", True), ("dedup, checkpoints", "15 minutes", False),
            ("no dedup", "0 seconds", True))


class _Reports(logging.Handler):
    """Collects the ingest batches' report lines."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "BatchReport(" in message:
            self.lines.append(message)


def _settings(root: Path, bootstrap: str, batch: int, horizon: str) -> Settings:
    return parse_settings({
        "lake": str(root / "lake"), "checkpoints": str(root / "ck"), "trigger": {"once": True},
        "quality": {"enabled": False},
        "sources": {"files": {"enabled": False},
                    "kafka": {"enabled": True, "bootstrap_servers": bootstrap, "logs_topics": [TOPIC],
                              "logs_envelope": "rsyslog", "logs_mapping": ["host"], "max_records_per_batch": batch,
                              "logs_dedup_horizon": horizon}}}, "benchmark")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    d = Path(tempfile.mkdtemp(prefix="dedup-cost-"))
    cluster = KafkaCluster(KafkaClusterSpec(d / "kafka", "3.9.1", brokers=1, jmx_exporter=False))
    reports = _Reports()
    logging.getLogger("jobs.ingest.batch").addHandler(reports)
    logging.getLogger("jobs.ingest.batch").setLevel(logging.INFO)
    try:
        cluster.start()
        bootstrap = cluster.bootstrap_servers()
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        for f in admin.create_topics([NewTopic(TOPIC, 3, 1)]).values():
            f.result(60)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(args.records):
            line = f"[2026-12-06 10:00:00,000] INFO [KafkaServer id=1] line {i} (kafka.server.KafkaServer)"
            producer.produce(TOPIC, json.dumps({"host": "kafka-1.bench", "file": "/var/log/kafka/server.log",
                                                "offset": i * 100, "line": line}).encode())
        producer.flush(60)
        spark = build_session(_settings(d / "warm", bootstrap, args.batch, VARIANTS[0][1]), "dedup-cost")
        try:
            for n in range(args.rounds * len(VARIANTS)):
                name, horizon, changelog = VARIANTS[n % len(VARIANTS)]
                spark.conf.set(CHANGELOG_CHECKPOINTING, str(changelog).lower())
                reports.lines.clear()
                started = time.perf_counter()
                run_pipeline(spark, _settings(d / f"run{n}", bootstrap, args.batch, horizon), families=("logs",))
                took = time.perf_counter() - started
                parsed = parse_all(reports.lines)
                reads = [b.stages["read"] for b in parsed if "read" in b.stages]
                batches = [b.seconds for b in parsed]
                print(f"{name:<18}: {len(batches):>3} batches, run {took:5.1f} s, batch read median "
                      f"{statistics.median(reads):.2f} s, batch median {statistics.median(batches):.2f} s", flush=True)
        finally:
            spark.stop()
    finally:
        cluster.stop()
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
