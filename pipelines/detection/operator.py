"""The stateful streaming operator around `pairing.step`: applyInPandasWithState keyed by (cluster, broker bucket),
event-time timeouts, one JSON state blob per group holding the PairingState of each (controller, broker) key of its
brokers (pairing itself stays per (cluster, controller, broker)) and each broker's view (`in_flight.BrokerView`).

`pair_requests(events, cfg)` takes pairing events (events.PAIRING_INPUT_DDL, heartbeats included) and returns
control_request_latency rows (LATENCY_OUTPUT_DDL). It works on a streaming DataFrame (the watermark is set here)
and, for tests and backfills, on a batch DataFrame (applyInPandas with a fresh state per key: nothing expires).
Late events (older than the watermark) are dropped by Spark before the operator and reported in the query
progress as `numRowsDroppedByWatermark`; the job logs that number.

A broker's keys share a group with its heartbeats (its metric samples and log lines: `events.heartbeats` keeps
their broker) and with every controller's lines about it, so the group knows what the broker itself showed, across
controllers: until when it was alive, which controller epoch it last served. The in-flight reports of each key are
bounded by that view (`in_flight.BrokerView`): the watermark alone is one event time over every cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import functions as F

from pipelines.detection.in_flight import BrokerView
from pipelines.detection.latency_rows import BREAKDOWN_COLUMNS
from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, request_key, step
from schemas.alerts import AlertType
from schemas.events import ControlRequest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.state import GroupState

    from pipelines.detection.config import DetectionConfig

__all__ = ["IN_FLIGHT_ALERTS", "LATENCY_OUTPUT_DDL", "PAIRING_BUCKETS", "STATE_DDL", "pair_requests",
           "pairing_function", "pairing_params"]

# The alert a request still running raises (and its finish or timeout updates): its levels are the pairing's
# in-flight milestones (pipelines.detection.in_flight). Per-cluster threshold overrides do not move them.
IN_FLIGHT_ALERTS: dict[ControlRequest, AlertType] = {
    ControlRequest.LEADER_AND_ISR: AlertType.DELAYED_LEADER_AND_ISR,
    ControlRequest.UPDATE_METADATA: AlertType.DELAYED_UPDATE_METADATA,
    ControlRequest.STOP_REPLICA: AlertType.DELAYED_STOP_REPLICA,
}

STATE_DDL = "blob STRING"
# Brokers are grouped into this many buckets per cluster: each call of the pandas function costs
# ~15 ms of fixed overhead (measured: 10,000 one-broker groups ran at ~640 events/s), so one group per broker
# does not scale to big clusters; 64 buckets keep each state value small (10,000 brokers: ~160 per bucket, ~90 KB).
PAIRING_BUCKETS = 64
LATENCY_OUTPUT_DDL = (
    "cluster STRING, broker_id INT, controller_id INT, controller_epoch INT, correlation_id LONG, request STRING, "
    "sent_ms LONG, handling_ms LONG, finished_ms LONG, end_to_end_ms DOUBLE, queue_ms DOUBLE, processing_ms DOUBLE, "
    "lock_wait_ms DOUBLE, partitions INT, status STRING, pairing STRING, flags STRING, request_key STRING, "
    "controller_queue_ms DOUBLE, first_row BOOLEAN, broker_queue_ms DOUBLE, local_ms DOUBLE, remote_ms DOUBLE, "
    "response_queue_ms DOUBLE, response_send_ms DOUBLE, served_ms DOUBLE, listener STRING, witnesses STRING"
)
# the request log's breakdown and what timed the request (latency_rows), passed through as they are
_PASSED = (*BREAKDOWN_COLUMNS, "served_ms", "witnesses")
_OUT_COLS = [c.split(" ")[0] for c in LATENCY_OUTPUT_DDL.split(", ")]


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


# Kinds of event that the broker itself logged (its liveness and the controller epoch it serves); the others (send,
# response, gone) are the controller's lines about it.
_BROKER_KINDS = frozenset({"received", "handling", "finished", "applied", "part_done", "served", "lock_wait"})


def _events_by_key(pdf: pd.DataFrame) -> tuple[dict[tuple[int, int], list[Event]], dict[int, BrokerView]]:
    """A group's rows -> pairing events per (controller, broker), and what each broker's own rows showed."""
    ts = pdf["ts"]
    millis = (ts.astype("int64") // 1_000_000) if str(ts.dtype).startswith("datetime64[ns") else \
        ts.map(lambda t: int(t.timestamp() * 1000))
    heart = (pdf["kind"] == "heartbeat").to_numpy()
    views: dict[int, BrokerView] = {}
    if heart.any():  # thousands of metric samples a batch: one vectorised max per broker
        # a heartbeat's own time: its ts plus the lag events.heartbeats moved it back by (elapsed_ms)
        alive = millis[heart] + pdf["elapsed_ms"][heart].fillna(0).astype("int64")
        latest = alive.groupby(pdf["broker_id"][heart].to_numpy()).max()
        views = {int(b): BrokerView(alive_until=int(t)) for b, t in latest.items()}
    out: dict[tuple[int, int], list[Event]] = {}
    rest = pdf[~heart]
    for i, row in zip(millis[~heart].tolist(), rest.itertuples(index=False), strict=True):
        detail = None if row.detail is None or (isinstance(row.detail, float) and row.detail != row.detail) \
            else str(row.detail)
        broker, epoch = int(row.broker_id), _int(row.controller_epoch)
        out.setdefault((int(row.controller_id), broker), []).append(
            Event(row.kind, i, row.request, _int(row.correlation_id), epoch,
                  _int(row.partitions), _int(row.elapsed_ms), _int(row.lock_wait_ms), detail))
        if row.kind in _BROKER_KINDS:
            views[broker] = views.get(broker, BrokerView()).seen(i, epoch)
    return out, views


def _rows(cluster: str, controller_id: int, broker_id: int, changed: list[dict[str, Any]],
          params: PairingParams) -> list[dict[str, Any]]:
    """Changed requests of one (cluster, controller, broker) -> LATENCY_OUTPUT_DDL dicts."""
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


def _frame(rows: list[dict[str, Any]]) -> Any:
    """LATENCY_OUTPUT_DDL dicts -> one pandas frame with Arrow-friendly dtypes."""
    out = pd.DataFrame(rows, columns=_OUT_COLS)
    for c in ("broker_id", "controller_id", "controller_epoch", "partitions"):
        out[c] = out[c].astype("Int32")
    for c in ("correlation_id", "sent_ms", "handling_ms", "finished_ms"):
        out[c] = out[c].astype("Int64")
    for c in ("end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "controller_queue_ms", "broker_queue_ms",
              "local_ms", "remote_ms", "response_queue_ms", "response_send_ms", "served_ms"):
        out[c] = out[c].astype("float64")
    return out


def _load(blob: str | None) -> tuple[dict[tuple[int, int], PairingState], dict[int, BrokerView]]:
    """A group's state blob -> its keys' pairing states and its brokers' views."""
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


def _step_group(cluster: str, states: dict[tuple[int, int], PairingState],
                events: dict[tuple[int, int], list[Event]], views: dict[int, BrokerView], watermark: int,
                params: PairingParams) -> list[dict[str, Any]]:
    """Run `pairing.step` for every (controller, broker) key of a group with events or state; drop keys left
    empty. Each key's in-flight reports are bounded by its broker's view."""
    rows: list[dict[str, Any]] = []
    for key in sorted(set(states) | set(events)):
        controller_id, broker = key
        st = states.setdefault(key, PairingState())
        changed = step(st, events.get(key, []), watermark, params, views.get(broker, BrokerView()))
        rows += _rows(cluster, controller_id, broker, changed, params)
        if st.next_deadline(params) is None and not st.seen and not st.completes:
            del states[key]
    return rows


def _batch_function(params: PairingParams) -> Any:
    """applyInPandas function for batch queries (applyInPandasWithState is stream-only): a bucket's events,
    fresh states, no watermark (nothing expires)."""

    def fn(key: tuple[Any, ...], pdf: Any) -> Any:
        cluster, bucket = key
        rows: list[dict[str, Any]] = []
        if bucket is not None and bucket >= 0:
            events, views = _events_by_key(pdf)
            rows = _step_group(cluster, {}, events, views, 0, params)
        return _frame(rows)

    return fn


def pairing_function(params: PairingParams) -> Any:
    """The function applyInPandasWithState calls once per (cluster, broker bucket) and micro-batch (and on
    timeout). The state value is one JSON object: the bucket's (controller, broker) pairing states and its brokers'
    views."""

    def fn(key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        cluster, bucket = key
        if bucket is None or bucket < 0:  # rows of no broker (cluster-wide samples): they only move the watermark
            for _ in pdfs:
                pass
            return
        states, views = _load(state.get[0]) if state.exists else ({}, {})
        events: dict[tuple[int, int], list[Event]] = {}
        if not state.hasTimedOut:
            for pdf in pdfs:
                evs, seen = _events_by_key(pdf)
                for k, e in evs.items():
                    events.setdefault(k, []).extend(e)
                views = _merge_views(views, seen)
        watermark = int(state.getCurrentWatermarkMs())
        rows = _step_group(cluster, states, events, views, watermark, params)
        views = {b: v for b, v in views.items() if any(k[1] == b for k in states)}
        if not states:
            state.remove()
        else:
            state.update((_dump(states, views),))
            deadlines = [d for d in (st.next_deadline(params) for st in states.values()) if d is not None]
            seen_ts = [max(st.seen.values()) + 1 for st in states.values() if st.seen]
            if deadlines or seen_ts:  # else only what the key learnt (PairingState.completes) is kept
                state.setTimeoutTimestamp(max(min(deadlines or seen_ts), watermark + 1))
        if rows:
            yield _frame(rows)

    return fn


def pairing_params(cfg: DetectionConfig) -> PairingParams:
    """The operator's limits from the detection config: the never-completed timeout, the clock skew, and the levels
    at which a request still running is reported (its alert type's warning and critical levels)."""
    levels = {}
    for request, alert_type in IN_FLIGHT_ALERTS.items() if cfg.in_flight_alerts else ():
        t = cfg.threshold(alert_type)
        levels[request.value] = (int(t.warning), int(t.critical))
    return PairingParams(timeout_ms=int(cfg.never_completed_timeout_s * 1000),
                         max_skew_ms=int(cfg.max_clock_skew_s * 1000), in_flight_ms=levels)


def pair_requests(events: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """Pairing events -> control_request_latency rows (timestamps converted, `updated_at`/`date` not yet set), and
    `first_row`: no earlier row of the request was emitted (pairing's module doc), so it can be appended.

    Streaming input gets `withWatermark("ts", cfg.watermark_delay_s)`; the operator emits in append mode.
    """
    params = pairing_params(cfg)
    src = events
    if events.isStreaming:
        src = events.withWatermark("ts", f"{int(cfg.watermark_delay_s * 1000)} milliseconds")
    bucket = F.when(F.col("broker_id") >= 0, F.pmod(F.col("broker_id"), F.lit(PAIRING_BUCKETS))).otherwise(-1)
    grouped = src.withColumn("bucket", bucket).groupBy("cluster", "bucket")
    if events.isStreaming:
        out = grouped.applyInPandasWithState(
            pairing_function(params), LATENCY_OUTPUT_DDL, STATE_DDL, "append", "EventTimeTimeout")
    else:
        out = grouped.applyInPandas(_batch_function(params), LATENCY_OUTPUT_DDL)
    return out.select(
        "cluster", "broker_id", "controller_id", "controller_epoch", "correlation_id", "request",
        F.timestamp_millis("sent_ms").alias("sent_ts"),
        F.timestamp_millis("handling_ms").alias("handling_ts"),
        F.timestamp_millis("finished_ms").alias("finished_ts"),
        "end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "partitions", "status", "pairing", "flags",
        "request_key", "controller_queue_ms", "first_row", *_PASSED,
    )
