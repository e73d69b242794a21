"""The stateful streaming operator around `pairing.step`: applyInPandasWithState keyed by
(cluster, controller_id, broker bucket), event-time timeouts, one JSON state blob per group holding the
PairingState of each of its brokers (pairing itself stays per (cluster, controller, broker)).

`pair_requests(events, cfg)` takes pairing events (events.PAIRING_INPUT_DDL, heartbeats included) and returns
control_request_latency rows (LATENCY_OUTPUT_DDL). It works on a streaming DataFrame (the watermark is set here)
and, for tests and backfills, on a batch DataFrame (applyInPandas with a fresh state per key: nothing expires).
Late events (older than the watermark) are dropped by Spark before the operator and reported in the query
progress as `numRowsDroppedByWatermark`; the job logs that number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, request_key, step
from schemas.alerts import AlertType
from schemas.events import ControlRequest

if TYPE_CHECKING:
    import pandas as pd
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
# Brokers are grouped into this many buckets per (cluster, controller): each call of the pandas function costs
# ~15 ms of fixed overhead (measured: 10,000 one-broker groups ran at ~640 events/s), so one group per broker
# does not scale to big clusters; 64 buckets keep each state value small (10,000 brokers: ~160 per bucket, ~90 KB).
PAIRING_BUCKETS = 64
LATENCY_OUTPUT_DDL = (
    "cluster STRING, broker_id INT, controller_id INT, controller_epoch INT, correlation_id LONG, request STRING, "
    "sent_ms LONG, handling_ms LONG, finished_ms LONG, end_to_end_ms DOUBLE, queue_ms DOUBLE, processing_ms DOUBLE, "
    "lock_wait_ms DOUBLE, partitions INT, status STRING, pairing STRING, flags STRING, request_key STRING, "
    "controller_queue_ms DOUBLE"
)
_OUT_COLS = [c.split(" ")[0] for c in LATENCY_OUTPUT_DDL.split(", ")]


def _int(v: Any) -> int | None:
    import pandas as pd

    return None if v is None or pd.isna(v) else int(v)


def _events_by_broker(pdf: pd.DataFrame) -> dict[int, list[Event]]:
    ts = pdf["ts"]
    millis = (ts.astype("int64") // 1_000_000) if str(ts.dtype).startswith("datetime64[ns") else None
    out: dict[int, list[Event]] = {}
    for i, row in enumerate(pdf.itertuples(index=False)):
        t = int(millis.iloc[i]) if millis is not None else int(row.ts.timestamp() * 1000)
        detail = None if row.detail is None or (isinstance(row.detail, float) and row.detail != row.detail) \
            else str(row.detail)
        out.setdefault(int(row.broker_id), []).append(
            Event(row.kind, t, row.request, _int(row.correlation_id), _int(row.controller_epoch),
                  _int(row.partitions), _int(row.elapsed_ms), _int(row.lock_wait_ms), detail))
    return out


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
        })
    return rows


def _frame(rows: list[dict[str, Any]]) -> Any:
    """LATENCY_OUTPUT_DDL dicts -> one pandas frame with Arrow-friendly dtypes."""
    import pandas as pd

    out = pd.DataFrame(rows, columns=_OUT_COLS)
    for c in ("broker_id", "controller_id", "controller_epoch", "partitions"):
        out[c] = out[c].astype("Int32")
    for c in ("correlation_id", "sent_ms", "handling_ms", "finished_ms"):
        out[c] = out[c].astype("Int64")
    for c in ("end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "controller_queue_ms"):
        out[c] = out[c].astype("float64")
    return out


def _load(blob: str | None) -> dict[int, PairingState]:
    if not blob:
        return {}
    return {int(b): PairingState.from_json(text) for b, text in json.loads(blob).items()}


def _step_group(cluster: str, controller_id: int, states: dict[int, PairingState],
                events: dict[int, list[Event]], watermark: int, params: PairingParams) -> list[dict[str, Any]]:
    """Run `pairing.step` for every broker of a bucket that has events or state; drop brokers left empty."""
    rows: list[dict[str, Any]] = []
    for broker in sorted(set(states) | set(events)):
        st = states.setdefault(broker, PairingState())
        rows += _rows(cluster, controller_id, broker, step(st, events.get(broker, []), watermark, params), params)
        if st.next_deadline(params) is None and not st.seen and not st.completes:
            del states[broker]
    return rows


def _batch_function(params: PairingParams) -> Any:
    """applyInPandas function for batch queries (applyInPandasWithState is stream-only): a bucket's events,
    fresh states, no watermark (nothing expires)."""

    def fn(key: tuple[Any, ...], pdf: Any) -> Any:
        cluster, controller_id, _bucket = key
        rows: list[dict[str, Any]] = []
        if controller_id is not None and controller_id >= 0:
            rows = _step_group(cluster, controller_id, {}, _events_by_broker(pdf), 0, params)
        return _frame(rows)

    return fn


def pairing_function(params: PairingParams) -> Any:
    """The function applyInPandasWithState calls once per (cluster, controller, bucket) and micro-batch (and on
    timeout). The state value is one JSON object {broker id: PairingState} for the bucket's brokers."""

    def fn(key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        cluster, controller_id, _bucket = key
        if controller_id is None or controller_id < 0:  # heartbeats: they only move the watermark
            for _ in pdfs:
                pass
            return
        states = _load(state.get[0]) if state.exists else {}
        events: dict[int, list[Event]] = {}
        if not state.hasTimedOut:
            for pdf in pdfs:
                for b, evs in _events_by_broker(pdf).items():
                    events.setdefault(b, []).extend(evs)
        watermark = int(state.getCurrentWatermarkMs())
        rows = _step_group(cluster, controller_id, states, events, watermark, params)
        if not states:
            state.remove()
        else:
            state.update((json.dumps({str(b): st.to_json() for b, st in states.items()}, separators=(",", ":")),))
            deadlines = [d for d in (st.next_deadline(params) for st in states.values()) if d is not None]
            seen = [max(st.seen.values()) + 1 for st in states.values() if st.seen]
            if deadlines or seen:  # else only what the key learnt (PairingState.completes) is kept: nothing expires
                state.setTimeoutTimestamp(max(min(deadlines or seen), watermark + 1))
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
    """Pairing events -> control_request_latency rows (timestamps converted, `updated_at`/`date` not yet set).

    Streaming input gets `withWatermark("ts", cfg.watermark_delay_s)`; the operator emits in append mode.
    """
    from pyspark.sql import functions as F

    params = pairing_params(cfg)
    src = events
    if events.isStreaming:
        src = events.withWatermark("ts", f"{int(cfg.watermark_delay_s * 1000)} milliseconds")
    bucket = F.when(F.col("broker_id") >= 0, F.pmod(F.col("broker_id"), F.lit(PAIRING_BUCKETS))).otherwise(-1)
    grouped = src.withColumn("bucket", bucket).groupBy("cluster", "controller_id", "bucket")
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
        "request_key", "controller_queue_ms",
    )
