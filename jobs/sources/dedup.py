"""Shipped log records delivered twice are kept once: the Kafka log query drops a record whose origin it kept within a
bounded horizon, on the executors, before the batch reaches its handler (Spark's `dropDuplicatesWithinWatermark`).

A shipper delivers at least once: after a crash it sends again what it had not checkpointed (rsyslog: the lines
after its last persisted imfile state), and a producer retry may write a record twice. The origin of a record
(jobs.sources.envelopes) is:

* `<host>:<file>` and the shipper's byte offset (or record number) when the envelope carries them: the same line
  sent twice has the same origin, whichever partition it came through;
* else, for a shipper that sends no offset, a content key: the cluster, broker, log kind and a 64-bit hash of the
  line, whose log4j timestamp (milliseconds) makes it the line's time and text; two identical lines of one broker and
  file in one millisecond are then one;
* a raw record (no envelope) or a record that could not be opened: its Kafka position, unique by construction.

The horizon is processing time (`ingest_ts`, stamped when the record is read): a record delivered again within
`sources.kafka.logs_dedup_horizon` (jobs.run.settings.DEFAULT_DEDUP_HORIZON) of its first delivery is dropped;
later, it is kept again. Processing time never goes back, so no record is ever late for the watermark (an
event-time watermark would drop a lagging partition's lines as late: lost). The kept origins live in the query's
state store (RocksDB, under its checkpoint), one key per record of the horizon.

Counts: the batch after a batch reads its query's progress and writes the `duplicates` dq rows of the batch
(:func:`dedup_results`): the records dropped as delivered twice, and `records read == raw + duplicates` (a record
dropped as late would be lost: it fails the check).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from schemas.dq import DEDUP_BALANCE_EXPECTATION, DEDUP_EXPECTATION, DEDUP_SUITE, DqResult
from schemas.inputs import Envelope
from schemas.routes import SOURCE_ERROR_FORMAT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DEDUP_KEY", "DEDUP_STATE_PROVIDER", "dedup_results", "drop_redelivered",
           "horizon_off"]

# The column holding a record's origin while the stream drops duplicates (dropped before the handler).
DEDUP_KEY = "_origin"
# The state store of the query's kept origins: RocksDB keeps them on local disk, not in the executors' heap (Spark's
# default HDFS-backed store holds every key of the horizon in memory).
DEDUP_STATE_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def horizon_off(horizon: str) -> bool:
    """Whether `horizon` (an interval: "15 minutes") turns de-duplication off (zero)."""
    return float(horizon.split()[0]) == 0


def drop_redelivered(stream: DataFrame, horizon: str, envelope: Envelope) -> DataFrame:
    """`stream` (raw-record columns) without the records whose origin it kept within `horizon` (module doc); a raw
    envelope's records are identified by their Kafka position only, so its stream is returned as it is."""
    if envelope == Envelope.RAW or horizon_off(horizon):
        return stream
    shipped = ~F.col("source").startswith("kafka:")
    opened = F.col("kind") != SOURCE_ERROR_FORMAT
    position = F.concat_ws("|", F.col("source"), F.col("source_offset").cast("string"))
    content = F.concat_ws("|", F.col("cluster"), F.col("broker_id").cast("string"), F.col("kind"),
                          F.xxhash64("line").cast("string"))
    key = F.when(shipped | ~opened, position).otherwise(content)
    return (stream.withColumn(DEDUP_KEY, key)
            .withWatermark("ingest_ts", horizon)
            .dropDuplicatesWithinWatermark([DEDUP_KEY])
            .drop(DEDUP_KEY))


def dedup_results(progress: Mapping[str, Any], raw_rows: int | None, table: str, now: dt.datetime
                  ) -> list[DqResult]:
    """The `duplicates` dq rows of the batch `progress` (a StreamingQueryProgress as a dict) reports: the records
    dropped as delivered twice, and `records read == raw + duplicates` (`raw_rows`: the bronze rows the batch kept;
    None: not known here, only the first row). No rows when the progress has no de-duplication."""
    ops = [op for op in progress.get("stateOperators") or []
           if "numDroppedDuplicateRows" in (op.get("customMetrics") or {})]
    if not ops:
        return []
    batch_id = int(progress["batchId"])
    dropped = sum(int(op["customMetrics"]["numDroppedDuplicateRows"]) for op in ops)
    kept = sum(int(op.get("numRowsUpdated") or 0) for op in ops)
    late = sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in ops)
    read = kept + dropped + late
    rows = [DqResult(table, batch_id, DEDUP_SUITE, DEDUP_EXPECTATION, True, dropped, read, now)]
    if raw_rows is not None:
        rows.append(DqResult(table, batch_id, DEDUP_SUITE, DEDUP_BALANCE_EXPECTATION,
                             late == 0 and kept == raw_rows, late + abs(kept - raw_rows), read, now))
    return rows
