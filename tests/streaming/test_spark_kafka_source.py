"""Spark's own Kafka source (sources.kafka.reader: spark) against the reference broker on 127.0.0.1: the same bronze
and silver rows as planewatch_kafka on the same topic, bounded batches, restart from the checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.run.jars import session_has_kafka
from jobs.run.runner import run_pipeline
from jobs.sources.kafka_stream import checkpoint_reader
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.streaming.test_kafka_source import FIXTURE_LOG, _produce, broker  # noqa: F401 - the broker fixture

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.slow]

# Columns that depend on when and in which micro-batch a record was read, not on the record.
RUN_COLUMNS = {"ingest_ts", "batch_id", "date"}
ODD_RECORDS = [b"\xff\xfe not utf-8 \x00", b"", b"[2021-03-02 08:00:00,000] INFO a line with no logger"]


def _kafka_sources(bootstrap: str, **kafka: Any) -> dict[str, Any]:
    """The settings' sources: the Kafka source on the topic kafka-logs (``kafka``: more of its options), no files."""
    return {"files": {"enabled": False},
            "kafka": {"enabled": True, "bootstrap_servers": bootstrap, "logs_topics": ["kafka-logs"], **kafka}}


def _rows(lake: Path, table: str) -> list[tuple]:
    rows = lake_rows(lake, table)
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items() if k not in RUN_COLUMNS)) for r in rows)


def test_spark_kafka_source_gives_the_python_sources_rows(spark, tmp_path: Path, broker: str) -> None:  # noqa: F811
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    if not session_has_kafka(spark):
        pytest.skip("spark-sql-kafka not fetched: python -m planewatch.kafka.artifacts fetch spark")
    admin = AdminClient({"bootstrap.servers": broker})
    for f in admin.create_topics([NewTopic("kafka-logs", num_partitions=2, replication_factor=1)]).values():
        f.result(30)
    lines = [line for line in FIXTURE_LOG.read_text().splitlines() if line.strip()]
    _produce(broker, "kafka-logs", lines)
    p = Producer({"bootstrap.servers": broker, "acks": "all", "log_level": 0})
    for value in ODD_RECORDS:
        p.produce("kafka-logs", value, key=b"3")
    assert p.flush(30) == 0

    for reader in ("spark", "python"):
        settings = pipeline_settings(tmp_path / reader,
                                     sources=_kafka_sources(broker, max_records_per_batch=7, reader=reader),
                                     quality={"enabled": False}, sink={"driver_batch_max_rows": 0})
        assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    spark_lake, python_lake = tmp_path / "spark" / "lake", tmp_path / "python" / "lake"
    assert checkpoint_reader(str(tmp_path / "spark" / "ck" / "ingest_logs_kafka")) == "spark"
    assert checkpoint_reader(str(tmp_path / "python" / "ck" / "ingest_logs_kafka")) == "python"

    raw = _rows(spark_lake, "raw_logs")
    assert len(raw) == len(lines) + len(ODD_RECORDS)
    assert raw == _rows(python_lake, "raw_logs")
    for table in ("state_change_events", "request_events", "quarantine"):
        assert _rows(spark_lake, table) == _rows(python_lake, table), table
    batches = {r["batch_id"] for r in lake_rows(spark_lake, "raw_logs")}
    assert len(batches) >= 2  # 8 records, at most 7 per batch (maxOffsetsPerTrigger)

    # Restart with reader auto: the checkpoint began with Spark's reader and stays with it; only new records.
    _produce(broker, "kafka-logs", ["this line is not a Kafka log line at all (2)"])
    auto = pipeline_settings(tmp_path / "spark", sources=_kafka_sources(broker, reader="auto"),
                             quality={"enabled": False})
    assert run_pipeline(spark, auto, families=("logs",), detection=False) == 0
    assert len(_rows(spark_lake, "raw_logs")) == len(lines) + len(ODD_RECORDS) + 1
