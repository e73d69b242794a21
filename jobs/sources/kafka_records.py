"""Kafka records -> raw-record rows (jobs.sources.streams.RAW_RECORD_DDL): the one mapping both Kafka readers use.

`planewatch_kafka` (the Python data source) calls `raw_kafka_batch` on the records it consumed; Spark's own `kafka`
source (jobs.sources.kafka_stream) runs it over the source's Arrow batches (`mapInArrow`). So a record becomes the same
bronze row whichever reader read it. A log record goes through its shipper's envelope and the mapping rules
(jobs.sources.envelopes: the line, its cluster, broker, kind and origin; `raw`: the value is the line, the key may
name the broker). A metric record's line is the value as UTF-8 (invalid bytes replaced, the line break stripped),
the broker id comes from the key (`broker-2` or `2`), the kind is sniffed from the value's first bytes, the source is
`kafka:<topic>/<partition>` and the source offset the record's offset.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

import pyarrow as pa

from jobs.sources.envelopes import MappingRule, open_envelopes
from jobs.sources.paths import broker_id_from_path, sniff
from schemas.inputs import Envelope, InputFamily, LogKind, MetricFormat

__all__ = ["RAW_NAMES", "SNIFF_BYTES", "kafka_arrow_to_raw", "raw_kafka_batch", "record_fields"]

# The kind of a record is sniffed from at most this many of its first bytes (a log line's logger name is near the
# end of its first line; a record is one line).
SNIFF_BYTES = 4096
RAW_NAMES = ("cluster", "broker_id", "kind", "line", "line_bytes", "source", "source_offset", "ingest_ts", "truncated")


def record_fields(
    value: bytes | None, key: bytes | None, family: str, default_cluster: str, cluster: str | None
) -> tuple[str, int | None, str, str, int]:
    """(cluster, broker_id, kind, line, line_bytes) of one Kafka record; from its key and content (no headers)."""
    raw = value or b""
    line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    key_s = key.decode("utf-8", errors="replace") if key else ""
    broker = broker_id_from_path(key_s) if key_s else None
    if broker is None and key_s.isdigit():
        broker = int(key_s)
    sniffed = sniff(raw[:SNIFF_BYTES])
    if family == InputFamily.METRICS:
        kind = sniffed[1] if sniffed and sniffed[0] == InputFamily.METRICS else MetricFormat.JSON.value
    else:
        kind = sniffed[1] if sniffed and sniffed[0] == InputFamily.LOGS else LogKind.UNKNOWN.value
    return cluster or default_cluster, broker, kind, line, len(raw)


def raw_kafka_batch(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None],
    sources: Sequence[str],
    offsets: Sequence[int],
    family: str,
    default_cluster: str,
    cluster: str | None,
    now: dt.datetime,
    envelope: Envelope = Envelope.RAW,
    rules: Sequence[MappingRule] = (),
) -> pa.RecordBatch:
    """The raw-record batch of some Kafka records (parallel sequences; `sources` as `kafka:<topic>/<partition>`)."""
    if family == InputFamily.LOGS:
        rows = open_envelopes(values, keys, sources, offsets, envelope, rules, cluster, default_cluster).to_arrow()
        n = rows.num_rows
        typed = {"cluster": pa.string(), "broker_id": pa.int32(), "kind": pa.string(), "line": pa.string(),
                 "line_bytes": pa.int64(), "source": pa.string(), "source_offset": pa.int64()}
        return pa.RecordBatch.from_arrays(
            [*(rows.column(name).combine_chunks().cast(t) for name, t in typed.items()),
             pa.array([now] * n, pa.timestamp("us", tz="UTC")), pa.array([False] * n, pa.bool_())],
            names=list(RAW_NAMES))
    cols: tuple[list[object], ...] = ([], [], [], [], [])
    for value, key in zip(values, keys, strict=True):
        for col, v in zip(cols, record_fields(value, key, family, default_cluster, cluster), strict=True):
            col.append(v)
    n = len(offsets)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(cols[0], pa.string()),
            pa.array(cols[1], pa.int32()),
            pa.array(cols[2], pa.string()),
            pa.array(cols[3], pa.string()),
            pa.array(cols[4], pa.int64()),
            pa.array(sources, pa.string()),
            pa.array(offsets, pa.int64()),
            pa.array([now] * n, pa.timestamp("us", tz="UTC")),
            pa.array([False] * n, pa.bool_()),
        ],
        names=list(RAW_NAMES),
    )


def kafka_arrow_to_raw(
    batches: Iterator[pa.RecordBatch], family: str, default_cluster: str, cluster: str | None,
    envelope: Envelope = Envelope.RAW, rules: Sequence[MappingRule] = (),
) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` function over Spark's Kafka source rows (key, value, topic, partition, offset)."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        topics = batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist()
        sources = [f"kafka:{t}/{p}" for t, p in zip(topics, partitions, strict=True)]
        yield raw_kafka_batch(
            batch.column("value").to_pylist(),
            batch.column("key").to_pylist(),
            sources,
            batch.column("offset").to_pylist(),
            family,
            default_cluster,
            cluster,
            dt.datetime.now(dt.UTC),
            envelope,
            rules,
        )
