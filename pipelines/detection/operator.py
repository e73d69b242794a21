"""The stateful streaming operator around `pairing.step`: applyInPandasWithState keyed by
(cluster, controller_id, broker_id), event-time timeouts, one JSON state blob per key.

`pair_requests(events, cfg)` takes pairing events (events.PAIRING_INPUT_DDL, heartbeats included) and returns
control_request_latency rows (LATENCY_OUTPUT_DDL). It works on a streaming DataFrame (the watermark is set here)
and, for tests and backfills, on a batch DataFrame (applyInPandas with a fresh state per key: nothing expires).
Late events (older than the watermark) are dropped by Spark before the operator and reported in the query
progress as `numRowsDroppedByWatermark`; the job logs that number.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, request_key, step

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.state import GroupState

    from pipelines.detection.config import DetectionConfig

__all__ = ["LATENCY_OUTPUT_DDL", "STATE_DDL", "pair_requests", "pairing_function"]

STATE_DDL = "blob STRING"
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


def _events(pdf: pd.DataFrame) -> list[Event]:
    ts = pdf["ts"]
    millis = (ts.astype("int64") // 1_000_000) if str(ts.dtype).startswith("datetime64[ns") else None
    out = []
    for i, row in enumerate(pdf.itertuples(index=False)):
        t = int(millis.iloc[i]) if millis is not None else int(row.ts.timestamp() * 1000)
        detail = None if row.detail is None or (isinstance(row.detail, float) and row.detail != row.detail) \
            else str(row.detail)
        out.append(Event(row.kind, t, row.request, _int(row.correlation_id), _int(row.controller_epoch),
                         _int(row.partitions), _int(row.elapsed_ms), _int(row.lock_wait_ms), detail))
    return out


def _frame(cluster: str, controller_id: int, broker_id: int, changed: list[dict[str, Any]],
           params: PairingParams) -> Any:
    """Changed requests of one key -> a pandas frame in LATENCY_OUTPUT_DDL (None when nothing changed)."""
    import pandas as pd

    if not changed:
        return None
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
    out = pd.DataFrame(rows, columns=_OUT_COLS)
    for c in ("broker_id", "controller_id", "controller_epoch", "partitions"):
        out[c] = out[c].astype("Int32")
    for c in ("correlation_id", "sent_ms", "handling_ms", "finished_ms"):
        out[c] = out[c].astype("Int64")
    for c in ("end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms", "controller_queue_ms"):
        out[c] = out[c].astype("float64")
    return out


def _batch_function(params: PairingParams) -> Any:
    """applyInPandas function for batch queries (applyInPandasWithState is stream-only): one key's events, a
    fresh state, no watermark (nothing expires)."""

    def fn(key: tuple[Any, ...], pdf: Any) -> Any:
        import pandas as pd

        cluster, controller_id, broker_id = key
        out = None
        if controller_id is not None and controller_id >= 0:
            out = _frame(cluster, controller_id, broker_id, step(PairingState(), _events(pdf), 0, params), params)
        return out if out is not None else pd.DataFrame(columns=_OUT_COLS)

    return fn


def pairing_function(params: PairingParams) -> Any:
    """The function applyInPandasWithState calls once per key per micro-batch (and on timeout)."""

    def fn(key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        cluster, controller_id, broker_id = key
        if controller_id is None or controller_id < 0:  # heartbeats: they only move the watermark
            for _ in pdfs:
                pass
            return
        st = PairingState.from_json(state.get[0]) if state.exists else PairingState()
        events: list[Event] = []
        if not state.hasTimedOut:
            for pdf in pdfs:
                events.extend(_events(pdf))
        watermark = int(state.getCurrentWatermarkMs())
        changed = step(st, events, watermark, params)
        deadline = st.next_deadline(params)
        if deadline is None and not st.seen:
            state.remove()
        else:
            state.update((st.to_json(),))
            if deadline is not None:
                state.setTimeoutTimestamp(max(deadline, watermark + 1))
            elif st.seen:
                state.setTimeoutTimestamp(max(max(st.seen.values()), watermark) + 1)
        out = _frame(cluster, controller_id, broker_id, changed, params)
        if out is not None:
            yield out

    return fn


def pair_requests(events: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """Pairing events -> control_request_latency rows (timestamps converted, `updated_at`/`date` not yet set).

    Streaming input gets `withWatermark("ts", cfg.watermark_delay_s)`; the operator emits in append mode.
    """
    from pyspark.sql import functions as F

    params = PairingParams(timeout_ms=int(cfg.never_completed_timeout_s * 1000),
                           max_skew_ms=int(cfg.max_clock_skew_s * 1000))
    src = events
    if events.isStreaming:
        src = events.withWatermark("ts", f"{int(cfg.watermark_delay_s * 1000)} milliseconds")
    grouped = src.groupBy("cluster", "controller_id", "broker_id")
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
