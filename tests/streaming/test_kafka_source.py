"""planewatch_kafka against the reference broker (`planewatch broker` in a subprocess on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
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
