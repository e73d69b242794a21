"""planewatch_kafka against the reference broker (`planewatch broker` in a subprocess on 127.0.0.1)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
from jobs.run.session import CHANGELOG_CHECKPOINTING, STATE_STORE_CONF
from jobs.run.settings import Settings
from schemas.dq import DEDUP_BALANCE_EXPECTATION, DEDUP_EXPECTATION, DEDUP_SUITE
from tests.lake_helpers import lake_rows, lake_table, pipeline_settings
from tests.polling import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FIXTURE_LOG = REPO / "tests" / "fixtures" / "ingest" / "demo-cluster" / "broker-2" / "state-change.log"
BROKER_START_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def broker(tmp_path: Path):
    port = _free_port()
    props = tmp_path / "broker.properties"
    props.write_text(
        f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\nadvertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'data'}\nauto.create.topics.enable=true\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(props)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("reference broker did not start") from None
            return False

    try:
        wait_until(listening, BROKER_START_S, "the reference broker to listen", interval=0.2)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for line in lines:
        p.produce(topic, line.encode(), key=b"broker-2")
    assert p.flush(30) == 0


def test_kafka_topic_to_tables_bounded_batches_and_restart(spark, tmp_path: Path, broker: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker})
    for f in admin.create_topics([NewTopic("kafka-logs", num_partitions=2, replication_factor=1)]).values():
        f.result(30)
    lines = [line for line in FIXTURE_LOG.read_text().splitlines() if line.strip()]
    _produce(broker, "kafka-logs", lines)
    lake = tmp_path / "lake"
    settings = pipeline_settings(
        tmp_path, cluster="kc",
        sources={"files": {"enabled": False},
                 "kafka": {"enabled": True, "bootstrap_servers": broker, "logs_topics": ["kafka-logs"],
                           "max_records_per_batch": 2}},
        quality={"enabled": False},
    )  # fmt: skip
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    raw = lake_rows(lake, "raw_logs")
    assert sorted(r["line"] for r in raw) == sorted(lines)
    assert {r["source"] for r in raw} <= {"kafka:kafka-logs/0", "kafka:kafka-logs/1"}
    assert {r["cluster"] for r in raw} == {"kc"}
    assert {r["broker_id"] for r in raw} == {2}
    assert len({r["batch_id"] for r in raw}) >= 3  # at most 2 records per micro-batch
    per_partition: dict[str, list[int]] = {}
    for r in raw:
        per_partition.setdefault(r["source"], []).append(r["source_offset"])
    assert all(sorted(v) == list(range(len(v))) for v in per_partition.values())
    sc = lake_table(lake, "state_change_events")
    assert 17 in sc.column("correlation_id").to_pylist()

    # Restart: only records produced since are read (offsets come from the checkpoint).
    _produce(broker, "kafka-logs", ["this line is not a Kafka log line at all (2)"])
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    raw2 = lake_table(lake, "raw_logs")
    assert raw2.num_rows == len(lines) + 1


def _shipped(lines: list[str], offsets: list[int]) -> list[bytes]:
    """rsyslog records (conf/rsyslog/planewatch.conf's template) of broker 2's state-change log, at `offsets`."""
    return [json.dumps({"host": "kafka-2.kd", "file": "/var/log/kafka/state-change.log", "offset": off,
                        "line": line}).encode() for line, off in zip(lines, offsets, strict=True)]


def _shipped_log(broker: str) -> tuple[list[str], list[int], list[bytes]]:
    """A 2-partition topic `shipped` made, and broker 2's state-change log as a shipper sends it: its lines, their
    byte offsets and their rsyslog records (none produced yet)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker})
    for f in admin.create_topics([NewTopic("shipped", num_partitions=2, replication_factor=1)]).values():
        f.result(30)
    lines = [line for line in FIXTURE_LOG.read_text().splitlines() if line.strip()]
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))[:-1]
    return lines, offsets, _shipped(lines, offsets)


def _shipped_settings(tmp_path: Path, broker: str, batch: int) -> Settings:
    """The log pipeline over the topic `shipped` (rsyslog envelope, host mapping), `batch` records a batch."""
    return pipeline_settings(
        tmp_path,
        sources={"files": {"enabled": False},
                 "kafka": {"enabled": True, "bootstrap_servers": broker, "logs_topics": ["shipped"],
                           "max_records_per_batch": batch, "logs_envelope": "rsyslog", "logs_mapping": ["host"]}},
        quality={"enabled": False},
    )  # fmt: skip


def test_records_delivered_twice_are_kept_once_and_counted(spark, tmp_path: Path, broker: str) -> None:
    """A shipper's re-sent records (same origin: host, file, offset), through another partition, in the same and in
    later batches, are one bronze and one silver row each; the `duplicates` dq rows count them, and records read ==
    raw + duplicates holds per batch."""
    from confluent_kafka import Producer

    lines, offsets, records = _shipped_log(broker)
    again = records[: len(records) // 2]  # a restarted shipper's re-sent half, through the other partition
    p = Producer({"bootstrap.servers": broker, "acks": "all", "log_level": 0})
    for rec in records:
        p.produce("shipped", rec, partition=0)
    for rec in again:
        p.produce("shipped", rec, partition=1)
    assert p.flush(30) == 0
    settings = _shipped_settings(tmp_path, broker, 4)
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    lake = tmp_path / "lake"
    raw = lake_rows(lake, "raw_logs")
    assert sorted((r["source"], r["source_offset"]) for r in raw) == sorted(
        ("kafka-2.kd:/var/log/kafka/state-change.log", off) for off in offsets)
    assert {(r["cluster"], r["broker_id"]) for r in raw} == {("kd", 2)}
    assert sorted(r["line"] for r in raw) == sorted(lines)
    events = lake_rows(lake, "state_change_events")
    assert len({(e["source"], e["source_offset"]) for e in events}) == len(events)
    dq = [r for r in lake_rows(lake, "dq_results") if r["suite"] == DEDUP_SUITE]
    counted = [r for r in dq if r["expectation"] == DEDUP_EXPECTATION]
    balance = [r for r in dq if r["expectation"] == DEDUP_BALANCE_EXPECTATION]
    assert sum(r["unexpected_count"] for r in counted) == len(again)
    assert sum(r["element_count"] for r in counted) == len(records) + len(again)
    assert balance
    assert all(r["success"] for r in balance)


@pytest.mark.parametrize("first_changelog", ["true", "false"], ids=["changelog", "upgraded-from-checkpoints"])
def test_records_delivered_again_after_the_pipeline_restarted_are_dropped(spark, tmp_path: Path, broker: str,
                                                                         first_changelog: str) -> None:
    """The kept origins outlive the pipeline (the query's RocksDB state under its checkpoint, committed as a changelog
    per batch): records a restarted shipper sends again after the pipeline stopped and started are dropped by the next
    run, which counts them; a new record is kept. Also when the first run committed a RocksDB checkpoint per batch
    (a checkpoint begun before the changelog was the setting)."""
    from confluent_kafka import Producer

    assert all(spark.conf.get(k) == v for k, v in STATE_STORE_CONF.items())
    _, offsets, records = _shipped_log(broker)
    first, again, new = records[:-1], records[:3], records[-1:]
    p = Producer({"bootstrap.servers": broker, "acks": "all", "log_level": 0})
    for rec in first:
        p.produce("shipped", rec, partition=0)
    assert p.flush(30) == 0
    settings = _shipped_settings(tmp_path, broker, 3)
    spark.conf.set(CHANGELOG_CHECKPOINTING, first_changelog)
    try:
        assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    finally:
        spark.conf.set(CHANGELOG_CHECKPOINTING, STATE_STORE_CONF[CHANGELOG_CHECKPOINTING])
    lake = tmp_path / "lake"
    assert len(lake_rows(lake, "raw_logs")) == len(first)
    changelogs = list((tmp_path / "ck" / "ingest_logs_kafka" / "state").rglob("*.changelog"))
    assert bool(changelogs) == (first_changelog == "true")
    batches = {r["batch_id"] for r in lake_rows(lake, "dq_results") if r["suite"] == DEDUP_SUITE}

    for rec in again + new:  # the shipper's re-sent head, through the other partition, then a line it had not sent
        p.produce("shipped", rec, partition=1)
    assert p.flush(30) == 0
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    raw = lake_rows(lake, "raw_logs")
    assert sorted((r["source"], r["source_offset"]) for r in raw) == sorted(
        ("kafka-2.kd:/var/log/kafka/state-change.log", off) for off in offsets)
    later = [r for r in lake_rows(lake, "dq_results")
             if r["suite"] == DEDUP_SUITE and r["expectation"] == DEDUP_EXPECTATION and r["batch_id"] not in batches]
    assert sum(r["unexpected_count"] for r in later) == len(again)
    assert sum(r["element_count"] for r in later) == len(again) + len(new)
