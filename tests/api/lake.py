"""Builders of small REAL Delta tables for the API tests (delta-rs, the contract schemas of schemas.tables)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from deltalake import write_deltalake

from pipelines.detection.incidents import group_incidents
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, INCIDENTS, METRIC_ROLLUPS_1M, METRIC_SAMPLES, Table

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def write(
    lake: Path, table: Table, rows: list[dict[str, Any]], mode: Literal["append", "overwrite"] = "append"
) -> None:
    schema = table.to_arrow()
    full = [{c: r.get(c) for c in schema.names} for r in rows]
    write_deltalake(
        str(lake / table.name),
        pa.Table.from_pylist(full, schema=schema),
        mode=mode,
        partition_by=list(table.partition_by) or None,
    )


def alert(i: int, *, started: datetime | None = None, **kw: Any) -> dict[str, Any]:
    started = started or T0 + timedelta(minutes=i)
    row = {
        "alert_id": f"a{i:05d}",
        "type": "DELAYED_LEADER_AND_ISR",
        "severity": "critical" if i % 2 else "warning",
        "status": "open",
        "cluster": "c1",
        "broker_id": i % 3,
        "listener": None,
        "started_at": started,
        "last_seen_at": started + timedelta(minutes=1),
        "resolved_at": None,
        "summary": f"LeaderAndIsr to broker {i % 3} took {1000 + i} ms",
        "evidence": json.dumps({"correlation_id": i, "end_to_end_ms": 1000 + i}),
        "value": 1000.0 + i,
        "threshold": 500.0,
        "updated_at": started + timedelta(minutes=1),
    }
    row.update(kw)
    return row


def incidents(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The incidents the pipeline's alert writers make of `alerts` (5-minute hysteresis, as the default conf)."""
    return [{**i, "updated_at": T0} for i in group_incidents(alerts, timedelta(seconds=300))]


def control_request(i: int, broker_id: int, e2e: float, **kw: Any) -> dict[str, Any]:
    sent = T0 + timedelta(seconds=10 * i)
    row = {
        "cluster": "c1",
        "broker_id": broker_id,
        "controller_id": 0,
        "controller_epoch": 1,
        "correlation_id": i,
        "request": "LeaderAndIsr",
        "sent_ts": sent,
        "handling_ts": sent + timedelta(milliseconds=e2e / 2),
        "finished_ts": sent + timedelta(milliseconds=e2e),
        "end_to_end_ms": e2e,
        "queue_ms": e2e / 2,
        "processing_ms": e2e / 4,
        "lock_wait_ms": e2e / 4,
        "partitions": 3,
        "status": "completed",
        "pairing": "correlation_id",
        "updated_at": sent,
        "date": sent.date(),
    }
    row.update(kw)
    return row


def samples(
    broker_id: int, signal: str, start: datetime, n: int, step_s: float = 1.0, **kw: Any
) -> list[dict[str, Any]]:
    out = []
    for k in range(n):
        ts = start + timedelta(seconds=k * step_s)
        row = {
            "cluster": "c1",
            "broker_id": broker_id,
            "ts": ts,
            "signal": signal,
            "mbean": f"kafka.network:type=RequestChannel,name={signal}",
            "attribute": "Value",
            "listener": None,
            "labels": [],
            "value": float(k),
            "raw_name": signal,
            "metric_format": "json",
            "source": "test",
            "source_offset": k,
            "date": ts.date(),
        }
        row.update(kw)
        out.append(row)
    return out


def rollup(broker_id: int, signal: str, minute: datetime, avg: float, samples: int = 60, **kw: Any) -> dict[str, Any]:
    row = {
        "cluster": "c1",
        "broker_id": broker_id,
        "signal": signal,
        "listener": None,
        "request": None,
        "attribute": "Value",
        "minute": minute,
        "min": avg - 1,
        "max": avg + 1,
        "avg": avg,
        "last": avg,
        "samples": samples,
        "date": minute.date(),
    }
    row.update(kw)
    return row


__all__ = [
    "ALERTS",
    "CONTROL_REQUEST_LATENCY",
    "INCIDENTS",
    "METRIC_ROLLUPS_1M",
    "METRIC_SAMPLES",
    "T0",
    "alert",
    "control_request",
    "incidents",
    "rollup",
    "samples",
    "write",
]
