"""Pairing inside the log family's micro-batch: the batch's silver rows -> control_request_latency rows and the
latency rules' candidates, the pairing state committed with the batch (lake.state.StateTable, table
`pairing_state`), so rows, state and alerts commit exactly once together under the batch's app transactions.

One event-time clock per cluster drives every log rule (`LogClock`): the highest log line time seen, and the
metric family's latest sample per broker read back from `metric_samples` (counted METRIC_HEARTBEAT_LAG_S in the
past: samples reach the lake before the log lines of the same seconds). It is kept in the state table with the
groups. A batch's watermark is its cluster's event time after the batch, less `detection.watermark_delay_s`: the
pairing expires and reports requests by it and the alerts resolve by it. A pairing event older than its cluster's
latest log line before the batch, less the delay, is late and not paired (counted), as a streaming operator drops it
(the metric samples do not make log lines late: they lead them). What a batch read of the metric family is written
to the query's checkpoint before it is used (`pairing_inputs/<batch>.json`), so a replay pairs with the same clock.

Where the groups are stepped follows the batch's placement: on the driver (pipelines.detection.pairing_groups.
step_groups) for a batch the driver processed, or in one Spark job (`applyInPandas` over (cluster, bucket), a task
per group set) over the batch's committed silver files when the executors processed it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.latency_history import LatencyHistory
from jobs.detect.recent_lines import KEEP_SLACK, RecentLines
from jobs.detect.recorded import BatchRecords
from lake.log import newest_time
from lake.merge import DeltaMerger
from lake.read import LatestTable
from lake.state import StateTable
from pipelines.detection.baselines import BASELINE_TYPES, add_baselines
from pipelines.detection.events import METRIC_HEARTBEAT_LAG_S, PAIRING_SCHEMA, metric_heartbeats, pairing_events
from pipelines.detection.latency_detectors import state_change_spans
from pipelines.detection.pairing_groups import (
    GROUP_OUTPUT,
    LATENCY_COLUMNS,
    PAIRING_BUCKETS,
    PAIRING_TASKS,
    GroupKey,
    GroupState,
    bucket_of,
    group_function,
    latency_table,
    pairing_params,
    step_groups,
)
from pipelines.detection.registry import latency_candidates
from schemas.alerts import AlertType
from schemas.events import LatencyStatus
from schemas.tables import CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, PAIRING_STATE, STATE_CHANGE_EVENTS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.detection.config import DetectionConfig

__all__ = ["CLOCK_BUCKET", "CLOCK_SCHEMA", "SOURCE_SPREAD", "ExecutorInput", "LogClock", "LogPairing", "PairingOutcome",
           "advance_logs", "batch_log_ms"]

log = logging.getLogger(__name__)

# The bucket of a cluster's clock row in pairing_state (groups are 0..PAIRING_BUCKETS-1).
CLOCK_BUCKET = -1
# The times of a control_request_latency row by which the pairing tells a request new to the table.
REQUEST_TIMES = ("sent_ts", "handling_ts", "finished_ts")
# The metric read of a cluster the clock has not seen yet starts this long before the batch's first line of it.
FIRST_METRIC_LOOKBACK = dt.timedelta(minutes=5)
# The metric read reaches this far past the wall clock (scrapes of hosts whose clocks run ahead).
METRIC_READ_AHEAD = dt.timedelta(hours=1)
# Where in the query's checkpoint the metric heartbeats each batch read are recorded (jobs.detect.recorded).
INPUTS_DIR = "pairing_inputs"
_UTC = dt.UTC
# The most a cluster's log time waits for the slowest of its sources in a batch (`batch_log_ms`). A catch-up reads
# a logging topic's partitions each up to its share of the batch, and a partition dense with a burst's lines stays
# behind the others in event time: in a fleet drain (1,000,000 lines over 45 minutes, batches of 200,000) one
# cluster's sources ended a batch 7.4 minutes apart, and with the newest line as the clock 10-21 % of the backlog's
# lines were late and unpaired (with 5 minutes here, 0.4 %). A source further behind than this is a host whose clock
# is wrong or a shipper replaying days-old files: it holds nothing back and its older lines are late. (One within
# it holds its cluster's watermark-driven rules back as far as it lags, for as long as it sends.)
SOURCE_SPREAD = dt.timedelta(minutes=30)
# What the clock reads of a batch's rows: its cluster, time and source (provenance: a file path, or a shipped
# record's origin `host:file`, else kafka:topic/N).
CLOCK_SCHEMA = pa.schema([("cluster", pa.string()), ("ts", pa.timestamp("us", "UTC")), ("source", pa.string())])
# The metric family's latest sample per broker, as the clock reads it.
LATEST_SCHEMA = pa.schema([("cluster", pa.string()), ("broker_id", pa.int32()), ("ts", pa.timestamp("us", "UTC"))])


def _ms(t: dt.datetime) -> int:
    return int((t if t.tzinfo else t.replace(tzinfo=_UTC)).timestamp() * 1000)


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=_UTC)


def batch_log_ms(per_source: Mapping[str, int], spread_ms: int) -> int:
    """The log time a batch brings a cluster to, from the newest line of each of its sources in the batch (epoch
    ms; a source: a file, or a shipped record's origin `host:file`): the slowest source's, as a per-partition
    watermark of a Kafka source (Flink's) is the least of its partitions', among the sources within `spread_ms` of
    the newest (one further behind holds nothing back: its lines are late). A source with no line in the batch does
    not hold it back (an idle partition, a quiet broker's file)."""
    newest = max(per_source.values())
    return min(t for t in per_source.values() if t >= newest - spread_ms)


@dataclass
class LogClock:
    """One cluster's event time: its latest log line, its latest metric sample, and each broker's latest sample
    (epoch ms)."""

    log_ms: int | None = None
    metric_ms: int | None = None
    alive: dict[int, int] = field(default_factory=dict)

    def event_ms(self) -> int | None:
        lagged = None if self.metric_ms is None else self.metric_ms - int(METRIC_HEARTBEAT_LAG_S * 1000)
        known = [t for t in (self.log_ms, lagged) if t is not None]
        return max(known) if known else None

    def to_json(self) -> str:
        return json.dumps({"log_ms": self.log_ms, "metric_ms": self.metric_ms,
                           "alive": {str(b): t for b, t in self.alive.items()}}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LogClock:
        raw = json.loads(text)
        return cls(raw.get("log_ms"), raw.get("metric_ms"), {int(b): int(t) for b, t in raw.get("alive", {}).items()})


def advance_logs(clocks: dict[str, LogClock], times: pa.Table, spread_ms: int) -> set[str]:
    """Move each cluster's log time (`clocks`, a clock made for a cluster new to them) by a batch's rows (`cluster`,
    `ts`, and `source` where known: batch_log_ms); the clusters whose log time moved. A log time never goes back."""
    times = times.filter(pc.is_valid(times["ts"])) if times.num_rows else times
    if not times.num_rows:
        return set()
    keys = ["cluster", "source"] if "source" in times.column_names else ["cluster"]
    newest: dict[str, dict[str, int]] = {}
    for row in times.group_by(keys).aggregate([("ts", "max")]).to_pylist():
        newest.setdefault(row["cluster"], {})[row.get("source") or ""] = _ms(row["ts_max"])
    moved = set()
    for cluster, sources in newest.items():
        clock = clocks.setdefault(cluster, LogClock())
        top = batch_log_ms(sources, spread_ms)
        if clock.log_ms is None or top > clock.log_ms:
            clock.log_ms = top
            moved.add(cluster)
    return moved


@dataclass
class PairingOutcome:
    """What pairing made of one log batch: the latency rules' candidates, the watermark of each cluster, counts."""

    candidates: list[dict[str, Any]]
    watermarks: dict[str, dt.datetime]
    moved: set[str] = field(default_factory=set)  # the clusters whose event time the batch moved
    rows: int = 0
    late: int = 0
    evicted: int = 0
    timings: dict[str, float] = field(default_factory=dict)


class LogPairing:
    """The pairing of one log query: its state (in memory, and in `pairing_state` as of its last batch)."""

    def __init__(self, settings: Any, query: str, run_id: str, cfg: DetectionConfig, checkpoint: str | None
                 ) -> None:
        self.cfg = cfg
        self.params = pairing_params(cfg)
        self.delay_ms = int(cfg.watermark_delay_s * 1000)
        prefix = f"{query}.{run_id}"
        self.state = StateTable(settings.table_path(PAIRING_STATE.name), PAIRING_STATE, f"{prefix}:pairing_state")
        latency_path = settings.table_path(CONTROL_REQUEST_LATENCY.name)
        self.latency = DeltaMerger(latency_path, CONTROL_REQUEST_LATENCY, f"{prefix}:control_request_latency",
                                   ["request_key"])
        self.samples = LatestTable(settings.table_path(METRIC_SAMPLES.name), METRIC_SAMPLES.to_arrow())
        self.state_changes = LatestTable(settings.table_path(STATE_CHANGE_EVENTS.name),
                                         STATE_CHANGE_EVENTS.to_arrow())
        self.latency_rows = LatestTable(latency_path, CONTROL_REQUEST_LATENCY.to_arrow())
        self.history = LatencyHistory(self.latency_rows, dt.timedelta(seconds=cfg.baseline_window_s))
        self.lines = RecentLines(self.state_changes,
                                 dt.timedelta(seconds=cfg.never_completed_timeout_s) + KEEP_SLACK)
        # a request's first row is appended only when it started after everything the table held when this query
        # started: an earlier one may be there already (the query's checkpoint was reset, or its last run crashed
        # between the commit and the checkpoint), and a MERGE finds it
        self.appends_after = newest_time(latency_path, REQUEST_TIMES)
        self.inputs = BatchRecords(os.path.join(checkpoint, INPUTS_DIR) if checkpoint else None)
        self.groups: dict[GroupKey, GroupState] = {}
        self.clocks: dict[str, LogClock] = {}
        self._loaded_for: int | None = None  # the batch whose state `groups` and `clocks` hold

    # -- state ----------------------------------------------------------------------------------------------
    def _ensure_state(self, batch_id: int) -> None:
        """Hold the state as of before `batch_id` (read from the table unless the previous batch left it here)."""
        if self._loaded_for is not None and self._loaded_for == batch_id - 1:
            return
        rows = self.state.load(batch_id).to_pylist()
        self.groups = {(r["cluster"], int(r["bucket"])): GroupState(r["state"], r["deadline"])
                       for r in rows if r["bucket"] != CLOCK_BUCKET}
        self.clocks = {r["cluster"]: LogClock.from_json(r["state"]) for r in rows if r["bucket"] == CLOCK_BUCKET}

    def _state_rows(self, clusters: set[str], batch_id: int) -> pa.Table:
        rows = [{"cluster": c, "bucket": b, "state": s.blob, "deadline": s.deadline, "batch_id": batch_id}
                for (c, b), s in self.groups.items() if c in clusters]
        rows += [{"cluster": c, "bucket": CLOCK_BUCKET, "state": self.clocks[c].to_json(), "deadline": None,
                  "batch_id": batch_id} for c in sorted(clusters) if c in self.clocks]
        return pa.Table.from_pylist(rows, PAIRING_STATE.to_arrow())

    # -- the metric family's heartbeats -------------------------------------------------------------------------
    def _metric_latest(self, times: pa.Table, batch_id: int) -> pa.Table:
        """(cluster, broker_id, ts) of the latest metric sample per broker since the clock's, for the clusters of
        the batch and of the state; recorded in the checkpoint before use, read from there by a replay."""
        schema = LATEST_SCHEMA
        recorded = self._recorded(batch_id)
        if recorded is not None:
            return pa.Table.from_pylist([{"cluster": c, "broker_id": b, "ts": _time(t)} for c, b, t in recorded],
                                        schema)
        firsts: dict[str, int] = {}
        if times.num_rows:
            per = times.group_by("cluster").aggregate([("ts", "min")])
            firsts = {c: _ms(t) for c, t in zip(per["cluster"].to_pylist(), per["ts_min"].to_pylist(), strict=True)}
        spans = []
        until = dt.datetime.now(_UTC) + METRIC_READ_AHEAD
        for cluster in sorted(set(firsts) | set(self.clocks)):
            clock = self.clocks.get(cluster)
            if clock is not None and clock.metric_ms is not None:
                lo = _time(clock.metric_ms)
            elif (first := firsts.get(cluster, clock.log_ms if clock is not None else None)) is not None:
                # no sample of the cluster seen yet: from a while before its first log line the pairing knows
                lo = _time(first) - FIRST_METRIC_LOOKBACK
            else:
                continue
            spans.append((cluster, lo, max(until, lo)))
        latest = schema.empty_table()
        if spans and self.samples.exists():
            rows = self.samples.read_spans(spans).select(["cluster", "broker_id", "ts"])
            rows = rows.filter(pc.is_valid(rows["broker_id"]))
            if rows.num_rows:
                latest = rows.group_by(["cluster", "broker_id"]).aggregate([("ts", "max")]).rename_columns(
                    ["cluster", "broker_id", "ts"]).cast(schema)
        self._record(batch_id, [(c, b, _ms(t)) for c, b, t in zip(
            latest["cluster"].to_pylist(), latest["broker_id"].to_pylist(), latest["ts"].to_pylist(), strict=True)])
        return latest

    def _recorded(self, batch_id: int) -> list[tuple[str, int, int]] | None:
        got = self.inputs.read(batch_id)
        try:
            return [(str(c), int(b), int(t)) for c, b, t in got["metric_latest"]] if got is not None else None
        except (TypeError, KeyError, ValueError):
            return None

    def _record(self, batch_id: int, latest: list[tuple[str, int, int]]) -> None:
        self.inputs.write(batch_id, {"metric_latest": latest})

    # -- the clock -----------------------------------------------------------------------------------------------
    def _advance(self, times: pa.Table, metric_latest: pa.Table) -> set[str]:
        """Move the clocks by the batch's log times (`cluster`, `ts`, and `source` where known: batch_log_ms) and
        the metric read; returns the clusters whose clock moved."""
        moved = advance_logs(self.clocks, times, int(SOURCE_SPREAD.total_seconds() * 1000))
        for cluster, broker, ts in zip(metric_latest["cluster"].to_pylist(), metric_latest["broker_id"].to_pylist(),
                                       metric_latest["ts"].to_pylist(), strict=True):
            clock = self.clocks.setdefault(cluster, LogClock())
            t = _ms(ts)
            if clock.metric_ms is None or t > clock.metric_ms:
                clock.metric_ms = t
                moved.add(cluster)
            if clock.alive.get(int(broker), -1) < t:
                clock.alive[int(broker)] = t
                moved.add(cluster)
        return moved

    def watermarks_ms(self) -> dict[str, int]:
        """Each cluster's watermark (epoch ms): its event time less the watermark delay."""
        return {c: t - self.delay_ms for c, clock in self.clocks.items() if (t := clock.event_ms()) is not None}

    def _alive_heartbeats(self, keys: set[GroupKey]) -> pa.Table:
        """Heartbeat events of the metric family's latest sample of each broker of the groups `keys`."""
        rows = [{"cluster": c, "broker_id": b, "ts": _time(t)} for c, clock in self.clocks.items()
                for b, t in clock.alive.items() if (c, bucket_of(b)) in keys]
        if not rows:
            return PAIRING_SCHEMA.empty_table()
        return metric_heartbeats(pa.Table.from_pylist(rows, LATEST_SCHEMA))

    # -- the batch ---------------------------------------------------------------------------------------------
    def _late(self, events: pa.Table, before: Mapping[str, int]) -> tuple[pa.Table, int]:
        """The batch's events less those older than their cluster's watermark before the batch (heartbeats stay)."""
        if not events.num_rows or not before:
            return events, 0
        frame = pl.from_arrow(events)
        assert isinstance(frame, pl.DataFrame)
        mark = pl.col("cluster").replace_strict({c: _time(t) for c, t in before.items()}, default=None,
                                                return_dtype=pl.Datetime("us", "UTC"))
        late = ((pl.col("ts") < mark) & (pl.col("kind") != "heartbeat")).fill_null(False)
        kept = frame.filter(~late)
        return kept.to_arrow().cast(PAIRING_SCHEMA), frame.height - kept.height

    def __call__(self, state_changes: pa.Table, requests: pa.Table, batch_id: int,
                 on_executors: ExecutorInput | None = None) -> PairingOutcome:
        """Pair the batch's rows (`state_changes`, `requests`: its silver rows; `on_executors`: step the groups in a
        Spark job over the batch's committed files instead), commit the latency rows and the state; returns the
        latency rules' candidates and the watermarks."""
        t0 = time.perf_counter()
        self._ensure_state(batch_id)
        self.lines.begin(batch_id)
        # lateness is judged against the log lines seen before (the metric samples lead the logs on purpose)
        before = {c: clock.log_ms - self.delay_ms for c, clock in self.clocks.items() if clock.log_ms is not None}
        if on_executors is None:
            events, late = self._late(pairing_events(state_changes, requests), before)
            times = _clock_times(state_changes, requests)
            self.lines.observe(state_changes)
        else:
            events, late, times = PAIRING_SCHEMA.empty_table(), 0, on_executors.times
            self.lines.observe(on_executors.lines)
        metric_latest = self._metric_latest(times, batch_id)
        moved = self._advance(times, metric_latest)
        marks = self.watermarks_ms()
        t1 = time.perf_counter()
        if on_executors is None:
            keys = {(c, bucket_of(b)) for c, b in zip(events["cluster"].to_pylist(), events["broker_id"].to_pylist(),
                                                      strict=True) if b >= 0}
            keys |= {k for k, s in self.groups.items()
                     if s.deadline is not None and k[0] in marks and marks[k[0]] >= s.deadline}
            stepped = pa.concat_tables([events, self._alive_heartbeats(keys)])
            rows, changed = step_groups(stepped, self.groups, marks, self.params)
            latency = latency_table(rows, dt.datetime.now(_UTC))
        else:
            latency, changed, late = self._step_on_executors(on_executors, before, marks)
        t2 = time.perf_counter()
        for key, new in changed.items():
            if new is None:
                self.groups.pop(key, None)
            else:
                self.groups[key] = new
        clusters = {k[0] for k in changed} | moved
        append = self._appendable(latency)
        self.latency.insert_arrow(latency.filter(append).drop_columns(["first_row"]), batch_id)
        self.latency.write_arrow(latency.filter(pc.invert(append)).drop_columns(["first_row"]), batch_id)
        self.state.commit(self._state_rows(clusters, batch_id), sorted(clusters), batch_id)
        self._loaded_for = batch_id
        t3 = time.perf_counter()
        cands, rule_timings = self._candidates(latency)
        evicted = int(pc.sum(pc.equal(latency["status"], LatencyStatus.EVICTED.value)).as_py() or 0) \
            if latency.num_rows else 0
        if evicted:  # the rows are in control_request_latency with that status: this says the bound was reached
            log.warning("pairing batch %d: %d open request(s) evicted by pairing's state bound (status %s)",
                        batch_id, evicted, LatencyStatus.EVICTED.value)
        if late:
            log.warning("pairing batch %d: %d line(s) older than their cluster's watermark were not paired (late)",
                        batch_id, late)
        timings = {"clock": t1 - t0, "pair": t2 - t1, "commit": t3 - t2, "latency rules": time.perf_counter() - t3,
                   **rule_timings}
        return PairingOutcome(cands, {c: _time(t) for c, t in marks.items()}, moved, latency.num_rows, late, evicted,
                              {k: round(v, 3) for k, v in timings.items()})

    def _appendable(self, tbl: pa.Table) -> pa.ChunkedArray:
        """The rows of `tbl` to append rather than merge: first rows (no earlier row of theirs was emitted) of
        requests that started after `appends_after`."""
        if tbl.num_rows == 0:
            return pa.chunked_array([pa.array([], pa.bool_())])
        first = pc.fill_null(tbl["first_row"], False)
        if self.appends_after is None:
            return first
        start = pc.coalesce(tbl["sent_ts"], tbl["handling_ts"], tbl["finished_ts"])
        after = pc.fill_null(pc.greater(start, pa.scalar(self.appends_after, pa.timestamp("us", "UTC"))), False)
        return pc.and_(first, after)

    def _candidates(self, latency: pa.Table) -> tuple[list[dict[str, Any]], dict[str, float]]:
        """The latency rules over the batch's changed requests, with the state-change lines a slow or still-open
        one needs (fetcher bursts, lock waits, elections) and the slow ones' baselines; with the time each part took
        (the batch's log)."""
        t0 = time.perf_counter()
        self.history.observe(latency)
        timings = {"history": time.perf_counter() - t0}
        if latency.num_rows == 0:
            return [], timings
        slowest = pc.max(latency["processing_ms"]).as_py()
        open_ = pc.is_in(latency["status"], pa.array([LatencyStatus.NEVER_COMPLETED.value,
                                                      LatencyStatus.IN_FLIGHT.value]))
        needed = bool(pc.any(open_).as_py()) or (
            slowest is not None and slowest >= self.cfg.threshold(AlertType.LOCK_CONTENTION).warning)
        spans = state_change_spans(latency, self.cfg) if needed else []
        t1 = time.perf_counter()
        fetch = self.lines.read_spans(spans) if spans else self.lines.schema.empty_table()
        t2 = time.perf_counter()
        cands = latency_candidates(latency, fetch, self.cfg)
        t3 = time.perf_counter()
        slow = [c for c in cands if c["type"] in BASELINE_TYPES]
        if slow and self.latency_rows.exists():
            add_baselines(cands, self.history.rows_for(slow), self.history.window, self.cfg)
        timings.update({"lines read": t2 - t1, "lines": fetch.num_rows, "rules": t3 - t2,
                        "baselines": time.perf_counter() - t3})
        return cands, timings

    # -- on the executors --------------------------------------------------------------------------------------
    def _step_on_executors(self, inputs: ExecutorInput, before: Mapping[str, int], marks: Mapping[str, int]
                           ) -> tuple[pa.Table, dict[GroupKey, GroupState | None], int]:
        """The groups stepped in one Spark job over the batch's pairing events (computed by the tasks from the
        committed silver files), the metric heartbeats and the groups' states."""
        spark = inputs.spark
        # what the driver path steps too: the groups the batch touches and those whose deadline the watermark passed
        # (a group's state crosses to the executors only then: at 2,000 brokers, every group every batch cost 13 s)
        stepped = inputs.groups | {k for k, s in self.groups.items()
                                   if s.deadline is not None and k[0] in marks and marks[k[0]] >= s.deadline}
        extra = [{"cluster": c, "controller_id": -1, "broker_id": b, "kind": "state", "ts": None, "request": None,
                  "correlation_id": None, "controller_epoch": None, "partitions": None, "elapsed_ms": None,
                  "lock_wait_ms": None, "detail": s.blob} for (c, b), s in self.groups.items() if (c, b) in stepped]
        driver_rows = pa.concat_tables([pa.Table.from_pylist(extra, PAIRING_SCHEMA),
                                        self._alive_heartbeats(stepped)])
        frames: list[DataFrame] = [spark.createDataFrame(driver_rows)] if driver_rows.num_rows else []
        frames += inputs.events
        if not frames:
            return latency_table([], dt.datetime.now(_UTC)), {}, 0
        union = frames[0]
        for f in frames[1:]:
            union = union.unionByName(f)
        from pyspark.sql import functions as F  # the executors' path only: the driver's path runs no Spark

        bucket = F.when(F.col("broker_id") >= 0, F.pmod(F.col("broker_id"), F.lit(PAIRING_BUCKETS))).otherwise(-1)
        task = F.pmod(F.hash("cluster", "bucket"), F.lit(PAIRING_TASKS))
        grouped = union.withColumn("bucket", bucket).where(F.col("bucket") >= 0).groupBy(task.alias("task"))
        # late events are left out and counted by the groups themselves (one job over the batch's files, not two)
        out = pa.table(grouped.applyInPandas(group_function(self.params, marks, before), GROUP_OUTPUT).toArrow())
        is_state = pc.fill_null(out["is_state"], False)
        states = out.filter(is_state)
        late = int(pc.sum(states["late"]).as_py() or 0) if states.num_rows else 0
        changed: dict[GroupKey, GroupState | None] = {}
        for c, b, blob, deadline in zip(*(states[n].to_pylist() for n in ("cluster", "bucket", "blob", "deadline")),
                                        strict=True):
            new = None if blob is None else GroupState(blob, deadline)
            if self.groups.get((c, b)) != new:
                changed[(c, b)] = new
        rows = out.filter(pc.invert(is_state)).select(list(LATENCY_COLUMNS))
        return latency_table(rows, dt.datetime.now(_UTC)), changed, late


def _clock_times(state_changes: pa.Table, requests: pa.Table) -> pa.Table:
    """`cluster`, `ts` and `source` (where the rows have it) of a batch's rows: what its clock is moved by."""
    keep = [t for t in (state_changes, requests) if t.num_rows]
    if not keep:
        return CLOCK_SCHEMA.empty_table()
    names = ["cluster", "ts", "source"] if all("source" in t.column_names for t in keep) else ["cluster", "ts"]
    schema = pa.schema([CLOCK_SCHEMA.field(n) for n in names])
    return pa.concat_tables([t.select(names).cast(schema) for t in keep])


@dataclass
class ExecutorInput:
    """A batch whose rows the executors staged: its pairing events as Spark frames over its committed silver files
    (the tasks make them), and the `cluster` and `ts` of its rows (two columns of those files, read here) for the
    clock."""

    spark: SparkSession
    events: Sequence[DataFrame]
    times: pa.Table
    # the groups the batch's rows touch (events.touched_brokers): with those whose deadline passed, the ones stepped
    groups: set[GroupKey]
    # its state-change lines the latency rules read (RecentLines)
    lines: pa.Table
