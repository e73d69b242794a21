"""`RollJudge`: ROLL_TOO_FAST over the brokers' shutdown lines a log batch brings, each judged by the roll-safety
verdict of its cluster just before it (pipelines.detection.roll_detectors) once the cluster's metric samples have
reached its time.

A log line can reach the lake before the scrapes of the seconds before it: judged at once, the verdict would read
the cluster as it was a scrape earlier. So a shutdown waits (is *pending*) until its cluster's newest sample is at
least as new as the line, or ROLL_JUDGE_WAIT_S of wall-clock time has passed (judged then with what there is).
What waits is carried from batch to batch and recorded in the query's checkpoint with each batch
(jobs.detect.recorded): a restarted query judges what its predecessor left pending, and a replayed batch starts
from what its first attempt started from.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.recorded import BatchRecords
from jobs.detect.roll_inputs import RollInputs
from lake.read import LatestTable
from pipelines.detection.config import DetectionConfig
from pipelines.detection.roll_detectors import (
    CLUSTER_STOP_S,
    FRESHER_EVENTS,
    SHUTDOWN_EVENTS,
    STOP_EVENTS,
    detect_roll_too_fast,
)
from pipelines.roll_safety import utc_frame

__all__ = ["PENDING_DIR", "ROLL_JUDGE_WAIT_S", "RollJudge"]

log = logging.getLogger(__name__)

# A shutdown waits at most this long (wall clock) for its cluster's metric samples to reach its time before it is
# judged with what there is: two scrapes at the longest interval detection reads.
ROLL_JUDGE_WAIT_S = 120.0
# Where in the log query's checkpoint the pending shutdowns are recorded, batch by batch.
PENDING_DIR = "roll_pending"
# A pending shutdown: the line's columns, and when it was first seen (`_seen`, epoch s).
_LINE_COLUMNS = ["cluster", "broker_id", "ts", "message"]
_PENDING_SCHEMA = pl.Schema([("cluster", pl.String()), ("broker_id", pl.Int32()), ("ts", pl.Datetime("us", "UTC")),
                             ("message", pl.String()), ("_seen", pl.Float64())])
_ISR_COLUMNS = ["cluster", "broker_id", "ts", "event", "topic", "partition", "target_broker_id", "message"]


def _to_json(pending: pl.DataFrame) -> list[dict[str, Any]]:
    return [{"cluster": r["cluster"], "broker_id": r["broker_id"], "ts_us": int(r["ts"].timestamp() * 1e6),
             "message": r["message"], "seen": r["_seen"]} for r in pending.iter_rows(named=True)]


def _from_json(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([{"cluster": r["cluster"], "broker_id": r["broker_id"],
                          "ts": dt.datetime.fromtimestamp(r["ts_us"] / 1e6, dt.UTC), "message": r["message"],
                          "_seen": float(r["seen"])} for r in rows], schema=_PENDING_SCHEMA)


class RollJudge:
    """The shutdowns of one log query, pending and judged (module docstring).

    Args:
        table_path: where each table of the lake is.
        checkpoint: the query's checkpoint (None: nothing is recorded, a restart forgets what was pending).
        state_changes: the reader of state_change_events the query keeps (the stops and ISR lines around a
            shutdown are read from it).
    """

    def __init__(self, table_path: Any, checkpoint: str | None, state_changes: LatestTable,
                 cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.roll = RollInputs(table_path)
        self.state_changes = state_changes
        self.records = BatchRecords(os.path.join(checkpoint, PENDING_DIR) if checkpoint else None)
        self._pending = pl.DataFrame(schema=_PENDING_SCHEMA)
        self._carried_into: int | None = None  # the batch `_pending` was carried into

    def pending(self, batch_id: int) -> pl.DataFrame:
        """The shutdowns waiting when batch `batch_id` starts: those the previous batch of this process left, else
        the ones recorded for it (a restart, or a replay)."""
        if self._carried_into == batch_id:
            return self._pending
        recorded = self.records.read(batch_id)
        if recorded is None:
            return pl.DataFrame(schema=_PENDING_SCHEMA)
        try:
            return _from_json(recorded)
        except (TypeError, KeyError, ValueError, AttributeError) as e:
            log.warning("the shutdowns recorded as pending for batch %d are malformed (%s): not judged", batch_id, e)
            return pl.DataFrame(schema=_PENDING_SCHEMA)

    def __call__(self, sc: pa.Table, batch_id: int) -> list[dict[str, Any]]:
        """ROLL_TOO_FAST candidates of the shutdowns pending and in `sc` (the batch's state_change_events rows)
        that can be judged now; the rest are recorded as carried into the next batch before this one commits."""
        now = time.time()
        pending = carried = self.pending(batch_id)
        shutdowns = sc.filter(pc.field("event").isin([e.value for e in SHUTDOWN_EVENTS]))
        if shutdowns.num_rows:
            seen = utc_frame(shutdowns.select(_LINE_COLUMNS)).with_columns(_seen=pl.lit(now))
            pending = pl.concat([pending, seen.cast(_PENDING_SCHEMA)])
        judged = pending.clear()
        if not pending.is_empty():
            pending = pending.join(self.roll.reached(pending), on="cluster", how="left")
            ready = ((pl.col("_newest") >= pl.col("ts")).fill_null(False)
                     | (pl.col("_seen") < now - ROLL_JUDGE_WAIT_S))
            judged = pending.filter(ready).drop("_newest")
            pending = pending.filter(~ready).drop("_newest")
        if not pending.is_empty() or not carried.is_empty():  # nothing recorded for a batch: nothing was pending
            self.records.write(batch_id + 1, _to_json(pending))
        self._pending, self._carried_into = pending, batch_id + 1
        return self._judge(judged.drop("_seen")) if not judged.is_empty() else []

    def _judge(self, judged: pl.DataFrame) -> list[dict[str, Any]]:
        samples, requests, alerts = self.roll.read(judged)  # the windows before the judged shutdowns only
        stops = isr = None
        if self.state_changes.exists():  # the stops and ISR lines of the membership window up to the shutdowns
            recent = utc_frame(self.state_changes.read_spans(
                self.roll.spans(judged, self.roll.th.membership_s, CLUSTER_STOP_S),
                where=pc.field("event").isin([e.value for e in (*STOP_EVENTS, *FRESHER_EVENTS)])).select(
                    _ISR_COLUMNS))
            stops = recent.filter(pl.col("event").is_in([e.value for e in STOP_EVENTS]))
            isr = recent.filter(pl.col("event").is_in([e.value for e in FRESHER_EVENTS]))
        return detect_roll_too_fast(judged, samples, requests, alerts, self.cfg, stops=stops,
                                    gates=self.roll.gates(judged), isr=isr)
