"""`pairing.step` over a micro-batch's pairing events, grouped by (cluster, broker bucket), each group's state one JSON
value (pure: Arrow and pandas in and out, no Spark, no I/O).

A broker's keys (cluster, controller, broker: pairing itself stays per key) share a group with its heartbeats (its
log lines and metric samples: events.pairing_events, events.metric_heartbeats) and with every controller's lines
about it, so the group knows what the broker itself showed, across controllers: until when it was alive, which
controller epoch it last served. The in-flight reports of each key are bounded by that view
(`in_flight.BrokerView`). Brokers are grouped into :data:`PAIRING_BUCKETS` buckets per cluster: a group is the unit
a task steps (jobs/ hands each group to one task, or steps them all on the driver) and the unit of state stored.

`step_group(cluster, blob, events, watermark_ms, params)` is all of it for one group: its state value (None: none
yet) and its events in, its changed requests (:data:`LATENCY_COLUMNS` rows) and its new state value (None: nothing
left to remember) and the next event time at which something in it expires (`deadline`) out. `step_groups` runs it
over every group of a batch that has events or whose deadline the watermark reached; `group_function` is the same
for a Spark `applyInPandas` over events and state rows, a call stepping the groups of one of :data:`PAIRING_TASKS`
task sets (:data:`GROUP_OUTPUT`). `latency_table` turns the rows into
control_request_latency's columns.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.detection.in_flight import BrokerView
from pipelines.detection.latency_rows import BREAKDOWN_COLUMNS
from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, request_key, step
from schemas.alerts import AlertType
from schemas.events import ControlRequest
from schemas.tables import CONTROL_REQUEST_LATENCY

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = [
    "GROUP_OUTPUT",
    "IN_FLIGHT_ALERTS",
    "LATENCY_COLUMNS",
    "PAIRING_BUCKETS",
    "PAIRING_TASKS",
    "GroupEvents",
    "GroupKey",
    "GroupState",
    "bucket_of",
    "group_events",
    "group_function",
    "latency_table",
    "pairing_params",
    "step_group",
    "step_groups",
]

# The alert a request still running raises (and its finish or timeout updates): its levels are the pairing's
# in-flight milestones (pipelines.detection.in_flight). Per-cluster threshold overrides do not move them.
IN_FLIGHT_ALERTS: dict[ControlRequest, AlertType] = {
    ControlRequest.LEADER_AND_ISR: AlertType.DELAYED_LEADER_AND_ISR,
    ControlRequest.UPDATE_METADATA: AlertType.DELAYED_UPDATE_METADATA,
    ControlRequest.STOP_REPLICA: AlertType.DELAYED_STOP_REPLICA,
}

# Brokers are grouped into this many buckets per cluster: each group is stepped as one call (on Spark, one call of
# the pandas function: ~15 ms of fixed overhead, measured: 10,000 one-broker groups ran at ~640 events/s), so one
# group per broker does not scale to big clusters; 64 buckets keep each state value small (10,000 brokers: ~160 per
# bucket, ~90 KB).
PAIRING_BUCKETS = 64
# A Spark job pairs a batch's groups in this many pandas calls, each stepping its groups one after the other: a call
# per group costs ~15 ms of its own (above), and a fleet of small clusters has a group per broker (2,000 brokers in
# 30 clusters: 1,528 groups; 13-15 s a batch as a call each). A few calls per executor core keep the tasks even.
PAIRING_TASKS = 16

GroupKey = tuple[str, int]  # (cluster, bucket)

# One changed request as pairing emits it (times in epoch ms; `first_row`: no earlier row of it was emitted).
LATENCY_COLUMNS: tuple[str, ...] = (
    "cluster", "broker_id", "controller_id", "controller_epoch", "correlation_id", "request", "sent_ms",
    "handling_ms", "finished_ms", "end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "partitions",
    "status", "pairing", "flags", "request_key", "controller_queue_ms", "first_row", *BREAKDOWN_COLUMNS,
    "served_ms", "witnesses",
)
# the request log's breakdown and what timed the request (latency_rows), passed through as they are
_PASSED = (*BREAKDOWN_COLUMNS, "served_ms", "witnesses")
_INT32 = ("broker_id", "controller_id", "controller_epoch", "partitions")
_INT64 = ("correlation_id", "sent_ms", "handling_ms", "finished_ms")
_FLOAT = ("end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "controller_queue_ms", "broker_queue_ms",
          "local_ms", "remote_ms", "response_queue_ms", "response_send_ms", "served_ms")
# The applyInPandas output: a group's latency rows (`is_state` false) and one row of its new state (`is_state`
# true: `bucket`, `blob` (null: nothing left), `deadline`).


def _ddl_type(column: str) -> str:
    if column == "first_row":
        return "boolean"
    return "int" if column in _INT32 else "long" if column in _INT64 else "double" if column in _FLOAT else "string"


GROUP_OUTPUT = ", ".join([f"{c} {_ddl_type(c)}" for c in LATENCY_COLUMNS]
                         + ["is_state boolean", "bucket int", "blob string", "deadline long", "late long"])
_OUTPUT_NAMES = [c.split(" ")[0] for c in GROUP_OUTPUT.split(", ")]


@dataclass(frozen=True)
class GroupState:
    """One group's stored state: its JSON value and the earliest event time at which something in it expires (None:
    nothing does; only what its keys learnt is kept, and only events step it again)."""

    blob: str
    deadline: int | None


def bucket_of(broker_id: int) -> int:
    """The bucket of a broker (-1: a row of no broker, which only moves event time)."""
    return int(broker_id) % PAIRING_BUCKETS if broker_id >= 0 else -1


# Kinds of event that the broker itself logged (its liveness and the controller epoch it serves); the others (send,
# response, gone) are the controller's lines about it.
_BROKER_KINDS = frozenset({"received", "handling", "finished", "applied", "part_done", "served", "lock_wait"})
# What pairing reads of an event row (besides its time).
_EVENT_COLUMNS = ("cluster", "controller_id", "broker_id", "kind", "request", "correlation_id", "controller_epoch",
                  "partitions", "elapsed_ms", "lock_wait_ms", "detail")
_INT_EVENT_COLUMNS = frozenset({"controller_id", "broker_id", "correlation_id", "controller_epoch", "partitions",
                                "elapsed_ms", "lock_wait_ms"})
_PER_MS = {"s": 1 / 1000, "ms": 1, "us": 1_000, "ns": 1_000_000}

# One group's events: pairing events per (controller, broker) in row order, and what each broker's own rows showed.
GroupEvents = tuple[dict[tuple[int, int], list[Event]], dict[int, BrokerView]]


def _millis(ts: pa.ChunkedArray) -> list[int]:
    """Epoch milliseconds of a timestamp column, whatever its unit."""
    per_ms = _PER_MS[ts.type.unit]
    raw = pc.cast(ts, pa.int64()).to_pylist()
    return [int(v // per_ms) for v in raw] if per_ms >= 1 else [int(v * 1000) for v in raw]


def group_events(events: pa.Table, by_bucket: bool = True) -> dict[GroupKey, GroupEvents]:
    """Event rows (:data:`events.PAIRING_SCHEMA` columns, any timestamp unit) -> each (cluster, bucket) group's
    events (`by_bucket` false: one group per cluster, bucket 0), in one pass over plain Python column values (a
    thousand groups a batch: no per-group frame). A heartbeat moves its broker's `alive_until` to its time plus the
    lag events.metric_heartbeats moved it back by (`elapsed_ms`); rows of no broker belong to no group."""
    if not events.num_rows:
        return {}
    col = {c: (events.column(c).cast(pa.int64()) if c in _INT_EVENT_COLUMNS else events.column(c)).to_pylist()
           for c in _EVENT_COLUMNS}  # integers as integers however they came (pandas: floats with NaN)
    millis = _millis(events.column("ts"))
    out: dict[GroupKey, GroupEvents] = {}
    for i, broker in enumerate(col["broker_id"]):
        if broker is None or broker < 0:
            continue
        key = (col["cluster"][i], bucket_of(broker) if by_bucket else 0)
        group = out.get(key)
        if group is None:
            group = out[key] = ({}, {})
        by_key, views = group
        kind, at = col["kind"][i], millis[i]
        if kind == "heartbeat":
            views[broker] = views.get(broker, BrokerView()).seen(at + (col["elapsed_ms"][i] or 0))
            continue
        epoch = col["controller_epoch"][i]
        by_key.setdefault((int(col["controller_id"][i]), broker), []).append(
            Event(kind, at, col["request"][i], col["correlation_id"][i], epoch, col["partitions"][i],
                  col["elapsed_ms"][i], col["lock_wait_ms"][i], col["detail"][i]))
        if kind in _BROKER_KINDS:
            views[broker] = views.get(broker, BrokerView()).seen(at, epoch)
    return out


def _rows(cluster: str, controller_id: int, broker_id: int, changed: list[dict[str, Any]],
          params: PairingParams) -> list[dict[str, Any]]:
    """Changed requests of one (cluster, controller, broker) -> LATENCY_COLUMNS dicts."""
    rows = []
    for r in changed:
        row = latency_row(r, params.max_skew_ms)
        rows.append({
            "cluster": cluster, "broker_id": broker_id, "controller_id": controller_id,
            "controller_epoch": row["controller_epoch"], "correlation_id": row["correlation_id"],
            "request": row["request"], "sent_ms": row["sent_ts"], "handling_ms": row["handling_ts"],
            "finished_ms": row["finished_ts"], "end_to_end_ms": row["end_to_end_ms"],
            "queue_ms": row["queue_ms"], "processing_ms": row["processing_ms"],
            "lock_wait_ms": row["lock_wait_ms"], "partitions": row["partitions"], "status": row["status"],
            "pairing": row["pairing"], "flags": row["flags"], "controller_queue_ms": row["controller_queue_ms"],
            "request_key": request_key(cluster, controller_id, broker_id, row["request"], row["anchor"]),
            "first_row": row["first_row"],
            **{c: row[c] for c in _PASSED},
        })
    return rows


def _load(blob: str | None) -> tuple[dict[tuple[int, int], PairingState], dict[int, BrokerView]]:
    """A group's state value -> its keys' pairing states and its brokers' views."""
    if not blob:
        return {}, {}
    raw = json.loads(blob)
    states = {(int(c), int(b)): PairingState.from_json(text)
              for key, text in raw["keys"].items() for c, b in [key.split(":")]}
    views = {int(b): BrokerView(v[0], v[1]) for b, v in raw["brokers"].items()}
    return states, views


def _dump(states: dict[tuple[int, int], PairingState], views: dict[int, BrokerView]) -> str:
    return json.dumps({"keys": {f"{c}:{b}": st.to_json() for (c, b), st in states.items()},
                       "brokers": {str(b): [v.alive_until, v.epoch] for b, v in views.items()}},
                      separators=(",", ":"))


def _merge_views(old: dict[int, BrokerView], new: dict[int, BrokerView]) -> dict[int, BrokerView]:
    out = dict(old)
    for b, v in new.items():
        out[b] = out.get(b, BrokerView()).seen(v.alive_until, v.epoch)
    return out


def step_group(cluster: str, blob: str | None, events: pd.DataFrame | pa.Table | GroupEvents | None, watermark: int,
               params: PairingParams) -> tuple[list[dict[str, Any]], GroupState | None]:
    """Fold one group's events (:data:`events.PAIRING_SCHEMA` rows, or as :func:`group_events` gives them; None:
    none, the watermark alone moved) into its state value; returns the changed requests and the new state (None:
    nothing left to remember)."""
    states, views = _load(blob)
    events_by_key: dict[tuple[int, int], list[Event]] = {}
    if isinstance(events, pd.DataFrame):
        events = pa.Table.from_pandas(events, preserve_index=False) if len(events) else None
    if isinstance(events, pa.Table):
        events = next(iter(group_events(events, by_bucket=False).values()), None)
    if events is not None:
        events_by_key, seen = events
        views = _merge_views(views, seen)
    rows: list[dict[str, Any]] = []
    for key in sorted(set(states) | set(events_by_key)):
        controller_id, broker = key
        st = states.setdefault(key, PairingState())
        changed = step(st, events_by_key.get(key, []), watermark, params, views.get(broker, BrokerView()))
        rows += _rows(cluster, controller_id, broker, changed, params)
        if st.next_deadline(params) is None and not st.seen and not st.completes:
            del states[key]
    if not states:
        return rows, None
    views = {b: v for b, v in views.items() if any(k[1] == b for k in states)}
    deadlines = [d for d in (st.next_deadline(params) for st in states.values()) if d is not None]
    seen_ts = [max(st.seen.values()) + 1 for st in states.values() if st.seen]
    # else only what the keys learnt (PairingState.completes) is kept: events alone step the group again
    deadline = max(min(deadlines or seen_ts), watermark + 1) if deadlines or seen_ts else None
    return rows, GroupState(_dump(states, views), deadline)


def step_groups(events: pa.Table, states: Mapping[GroupKey, GroupState], watermarks: Mapping[str, int],
                params: PairingParams) -> tuple[list[dict[str, Any]], dict[GroupKey, GroupState | None]]:
    """Step every group with events in `events` (:data:`events.PAIRING_SCHEMA`), or with state whose deadline its
    cluster's watermark (epoch ms; a cluster without one: none) reached; returns the changed requests and the groups'
    new states (None: the group's state is gone). Rows of no broker only move event time and belong to no group."""
    by_group = group_events(events)
    due = {k for k, s in states.items()
           if s.deadline is not None and k[0] in watermarks and watermarks[k[0]] >= s.deadline}
    rows: list[dict[str, Any]] = []
    changed: dict[GroupKey, GroupState | None] = {}
    for key in sorted(set(by_group) | due):
        cluster, _bucket = key
        old = states.get(key)
        out, new = step_group(cluster, old.blob if old else None, by_group.get(key),
                              watermarks.get(cluster, 0), params)
        rows += out
        if new != old:
            changed[key] = new
    return rows, changed


def group_function(params: PairingParams, watermarks: Mapping[str, int], late_before: Mapping[str, int] | None = None
                   ) -> Callable[[tuple[Any, ...], pd.DataFrame], pd.DataFrame]:
    """The function a Spark `applyInPandas` calls over a set of (cluster, bucket) groups (one group, or the groups of
    one task: :data:`PAIRING_TASKS`): each group's event rows and at most one state row (kind `state`, its value in
    `detail`) in (columns of :data:`events.PAIRING_SCHEMA` plus `bucket`), each group's latency rows and one state
    row out (:data:`GROUP_OUTPUT`). `late_before`: per cluster, the event time (epoch ms) before which an event is
    late: it is left out and counted (the state row's `late`)."""

    def fn(_key: tuple[Any, ...], pdf: pd.DataFrame) -> pd.DataFrame:
        is_state = (pdf["kind"] == "state").to_numpy()
        blobs = {(str(c), int(b)): blob for c, b, blob in zip(pdf["cluster"][is_state], pdf["bucket"][is_state],
                                                              pdf["detail"][is_state], strict=True)}
        events = pa.Table.from_pandas(pdf[~is_state].drop(columns=["bucket"]), preserve_index=False)
        late: dict[GroupKey, int] = {}
        if late_before and events.num_rows:
            marks = pc.cast(pa.array([late_before.get(c) for c in events.column("cluster").to_pylist()],
                                     pa.int64()), pa.timestamp("ms"))
            ts = pc.cast(events.column("ts"), pa.timestamp("ms", "UTC"), safe=False).cast(pa.timestamp("ms"))
            dropped = pc.fill_null(pc.and_(pc.less(ts, marks), pc.not_equal(events.column("kind"), "heartbeat")),
                                   False)
            for c, b in zip(*(events.filter(dropped).column(n).to_pylist() for n in ("cluster", "broker_id")),
                            strict=True):
                late[(c, bucket_of(b))] = late.get((c, bucket_of(b)), 0) + 1
            events = events.filter(pc.invert(dropped))
        grouped = group_events(events)
        rows: list[dict[str, Any]] = []
        states: list[dict[str, Any]] = []
        for cluster, bucket in sorted(set(grouped) | set(blobs) | set(late)):
            out, new = step_group(cluster, blobs.get((cluster, bucket)), grouped.get((cluster, bucket)),
                                  watermarks.get(cluster, 0), params)
            rows += out
            states.append({"cluster": cluster, "bucket": bucket, "blob": new.blob if new else None,
                           "deadline": new.deadline if new else None, "late": late.get((cluster, bucket), 0)})
        out_rows = _frame(rows)
        out_rows["is_state"] = False
        # the state rows in the same dtypes as the rows (a concat of all-null columns of other dtypes is ambiguous)
        state_rows = _frame([dict.fromkeys(LATENCY_COLUMNS) | {"cluster": st["cluster"]} for st in states])
        state_rows["is_state"] = True
        for name in ("bucket", "blob", "deadline", "late"):
            state_rows[name] = [st[name] for st in states]
        return pd.concat([out_rows, state_rows], ignore_index=True).reindex(columns=_OUTPUT_NAMES)

    return fn


def _frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """LATENCY_COLUMNS dicts -> one pandas frame with Arrow-friendly dtypes."""
    out = pd.DataFrame(list(rows), columns=list(LATENCY_COLUMNS))
    for c in _INT32:
        out[c] = out[c].astype("Int32")
    for c in _INT64:
        out[c] = out[c].astype("Int64")
    for c in _FLOAT:
        out[c] = out[c].astype("float64")
    return out


def latency_table(rows: pa.Table | list[dict[str, Any]], now: dt.datetime) -> pa.Table:
    """Changed requests (LATENCY_COLUMNS, as rows or Arrow) -> control_request_latency's columns plus `first_row`:
    times as timestamps, `updated_at` = `now`, `date` of the request's start."""
    frame = pl.from_pandas(_frame(rows)) if isinstance(rows, list) else pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    stamp = {c: pl.from_epoch(pl.col(c.replace("_ts", "_ms")), time_unit="ms").dt.replace_time_zone("UTC")
             for c in ("sent_ts", "handling_ts", "finished_ts")}
    out = frame.with_columns(**stamp).with_columns(
        updated_at=pl.lit(now).cast(pl.Datetime("us", "UTC")),
        date=pl.coalesce("sent_ts", "handling_ts", "finished_ts").dt.date(),
    )
    schema = CONTROL_REQUEST_LATENCY.to_arrow()
    table = out.select([*schema.names, "first_row"]).to_arrow()
    return table.cast(pa.schema([*schema, pa.field("first_row", pa.bool_())]))


def pairing_params(cfg: DetectionConfig) -> PairingParams:
    """The pairing's limits from the detection config: the never-completed timeout, the clock skew, and the levels
    at which a request still running is reported (its alert type's warning and critical levels)."""
    levels = {}
    for request, alert_type in IN_FLIGHT_ALERTS.items() if cfg.in_flight_alerts else ():
        t = cfg.threshold(alert_type)
        levels[request.value] = (int(t.warning), int(t.critical))
    return PairingParams(timeout_ms=int(cfg.never_completed_timeout_s * 1000),
                         max_skew_ms=int(cfg.max_clock_skew_s * 1000), in_flight_ms=levels,
                         watermark_delay_ms=int(cfg.watermark_delay_s * 1000))
