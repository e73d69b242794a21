"""One request as pairing follows it: the silver row reduced to an `Event`, and the record (a dict, JSON-ready)
that a key's state holds per request, with what every handler reads of it (pure, no I/O).

`new_record(event, anchor)` starts a record from a line; `start_of(record)` is when its request began (its send,
else its handling, else its first line, else its finish less its elapsed time); `broker_count` keeps the largest
partition count a broker line gives; `served_breakdown` reads a request-log line's breakdown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pipelines.detection.latency_rows import BREAKDOWN_COLUMNS
from schemas.events import LatencyStatus

__all__ = ["Event", "broker_count", "new_record", "served_breakdown", "start_of"]

_IN_FLIGHT = LatencyStatus.IN_FLIGHT.value


@dataclass(frozen=True)
class Event:
    """One silver row, reduced to what pairing needs. Times are epoch milliseconds (event time)."""

    kind: str
    ts: int
    request: str | None = None
    correlation_id: int | None = None
    controller_epoch: int | None = None
    partitions: int | None = None
    elapsed_ms: int | None = None
    lock_wait_ms: int | None = None
    # TRACE controllers (2.2-2.5) log one Sending line per PARTITION: `detail` names it (topic-partition) and
    # consecutive such lines of one burst are one request. A 2.2-2.5 broker's per-partition Received line names its
    # partition the same way; a `served` event carries the request log's breakdown (JSON, latency_rows).
    detail: str | None = None



def broker_count(r: dict[str, Any], ev: Event) -> None:
    """The request's partition count is the largest a broker line gives: the summary `Handling/Finished ... for N
    partitions` wins over a per-partition TRACE line seen first (`... starting the become-follower transition for
    partition p`: 1 of 150, Apache Kafka 3.9.1 at TRACE, a topic created)."""
    if ev.partitions is not None and ev.partitions > (r["partitions"] or 0):
        r["partitions"], r["dirty"] = ev.partitions, True


def start_of(r: dict[str, Any]) -> int:
    for k in ("sent_ts", "handling_ts", "received_ts"):
        if r.get(k) is not None:
            return int(r[k])
    if r["finished_ts"] is not None and r["elapsed_ms"] is not None:
        return int(r["finished_ts"]) - int(r["elapsed_ms"])
    return int(r["finished_ts"] if r["finished_ts"] is not None else r["resp_ts"])


def served_breakdown(detail: str | None) -> dict[str, Any]:
    """A `served` event's request-log breakdown (events.pairing_events: JSON of latency_rows.SERVED_BREAKDOWN)."""
    if not detail:
        return {}
    try:
        raw = json.loads(detail)
    except ValueError:
        return {}
    return {k: raw[k] for k in BREAKDOWN_COLUMNS if k in raw} if isinstance(raw, dict) else {}


def new_record(ev: Event, anchor: str) -> dict[str, Any]:
    return {
        "anchor": anchor,
        "request": ev.request,
        "corr": ev.correlation_id,
        "epoch": ev.controller_epoch,
        "sent_ts": None,
        "handling_ts": None,
        "finished_ts": None,
        "resp_ts": None,
        "elapsed_ms": None,
        "lock_wait_ms": None,
        "partitions": ev.partitions,
        "ctl_wait_ms": None,
        "pairing": "correlation_id" if ev.correlation_id is not None else "order",
        "flags": [],
        "status": _IN_FLIGHT,
        "dirty": True,
        "emitted": False,
    }
