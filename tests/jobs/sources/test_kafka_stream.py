"""sources.kafka.reader: which reader a query uses, and the one record mapping both readers share (no Spark)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa

from jobs.sources.kafka_records import RAW_NAMES, kafka_arrow_to_raw, raw_kafka_batch
from jobs.sources.kafka_stream import checkpoint_reader, choose_reader

NOW = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)


def _offsets(ck: Path, batch: int, end: str) -> None:
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{end}\n')


def test_a_checkpoint_stays_with_the_reader_that_began_it(tmp_path: Path) -> None:
    python_ck, spark_ck, fresh = tmp_path / "p", tmp_path / "s", tmp_path / "new"
    _offsets(python_ck, 0, '{"partitions":{"kafka-logs/0":3}}')
    _offsets(python_ck, 1, '{"partitions":{"kafka-logs/0":5,"kafka-logs/1":2}}')
    _offsets(spark_ck, 0, '{"partitions":{"0":4}}')  # Spark's form, for a topic named "partitions"
    assert (checkpoint_reader(str(python_ck)), checkpoint_reader(str(spark_ck))) == ("python", "spark")
    assert checkpoint_reader(str(fresh)) is None
    assert choose_reader("auto", True, str(python_ck)) == "python"
    assert choose_reader("auto", False, str(spark_ck)) == "spark"  # and the session's missing jar is an error later
    assert (choose_reader("auto", True, str(fresh)), choose_reader("auto", False, str(fresh))) == ("spark", "python")
    assert choose_reader("python", True, str(spark_ck)) == "python"


def test_spark_kafka_rows_map_like_the_python_readers_records() -> None:
    values = [b"[2021-03-02 08:00:00,010] INFO [Broker id=2] x (state.change.logger)\n", b"\xff\x00", None]
    keys = [b"broker-2", b"7", None]
    spark_rows = pa.RecordBatch.from_pydict({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": ["t", "t", "u"], "partition": pa.array([0, 0, 3], pa.int32()),
        "offset": pa.array([5, 6, 0], pa.int64()),
    })  # fmt: skip
    (got,) = kafka_arrow_to_raw(iter([spark_rows]), "logs", "dflt", None)
    want = raw_kafka_batch(values, keys, ["kafka:t/0", "kafka:t/0", "kafka:u/3"], [5, 6, 0], "logs", "dflt", None, NOW)
    assert got.schema.names == list(RAW_NAMES)
    assert got.drop_columns(["ingest_ts"]).equals(want.drop_columns(["ingest_ts"]))
    assert want.column("broker_id").to_pylist() == [2, 7, None]
    assert want.column("kind").to_pylist() == ["state-change", "unknown", "unknown"]
    assert want.column("line").to_pylist()[0].endswith("(state.change.logger)")
    assert want.column("line_bytes").to_pylist() == [len(values[0]), 2, 0]
