"""One control request's derived durations (a control_request_latency row) and its stable id."""

from __future__ import annotations

import hashlib
from typing import Any

from schemas.events import LatencyStatus

__all__ = ["BREAKDOWN_COLUMNS", "SERVED_BREAKDOWN", "latency_row", "request_key"]

# the control_request_latency status (schemas.events.LatencyStatus) as the plain string the state holds
_IN_FLIGHT = LatencyStatus.IN_FLIGHT.value

# The broker's own breakdown of a control request's time, from its request log line (request_events column ->
# control_request_latency column): a `served` pairing event carries it as JSON in `detail` (events.pairing_events).
SERVED_BREAKDOWN: tuple[tuple[str, str], ...] = (
    ("request_queue_time_ms", "broker_queue_ms"),
    ("local_time_ms", "local_ms"),
    ("remote_time_ms", "remote_ms"),
    ("response_queue_time_ms", "response_queue_ms"),
    ("send_time_ms", "response_send_ms"),
    ("listener", "listener"),
)
BREAKDOWN_COLUMNS: tuple[str, ...] = tuple(name for _, name in SERVED_BREAKDOWN)


def request_key(cluster: str, controller_id: int, broker_id: int, request: str | None, anchor: str) -> str:
    """Stable id of one control request: the MERGE key of control_request_latency."""
    raw = f"{cluster}|{controller_id}|{broker_id}|{request}|{anchor}"
    return hashlib.sha1(raw.encode()).hexdigest()[:20]



def latency_row(r: dict[str, Any], max_skew_ms: int) -> dict[str, Any]:
    """Derived durations of one request (ms), FACTS.md 1.3: lock wait = elapsed - (Finished ts - Handling ts), or
    on 2.2-2.5 the first Handling line's time - the last Received line's (pairing.py); a
    request reported while still running (`as_of`, pipelines.detection.in_flight) gets its age so far."""
    flags: list[str] = list(r["flags"])
    sent, hand, fin, el = r["sent_ts"], r["handling_ts"], r["finished_ts"], r["elapsed_ms"]
    queue = processing = lock = e2e = None
    if sent is not None and hand is not None:
        queue = float(hand - sent)
        if queue < 0:
            flags.append("clock_skew")
            queue = 0.0
    if hand is not None and fin is not None:
        processing = float(fin - hand)
    received = r.get("received_ts")
    witnesses = _witnesses(r)
    if r["lock_wait_ms"] is not None:
        lock = float(r["lock_wait_ms"])
        witnesses.append("lock_line")
    elif el is not None and processing is not None:
        lock = max(0.0, float(el) - processing)
        witnesses.append("lock_inferred")
    elif received is not None and hand is not None and received < hand:  # 2.2-2.5: Received precedes the lock
        lock = float(hand - received)
        witnesses.append("lock_inferred")
    if fin is not None and sent is not None:
        e2e = float(fin - sent)
        if el is not None and e2e < el:  # the hosts' clocks disagree: the broker's own elapsed time is a floor
            if el - e2e > 1:
                flags.append("clock_skew")
            e2e = float(el)
    elif fin is not None and el is not None:
        e2e = float(el)
    elif fin is not None and r.get("served_ms") is not None:  # the request log's totalTime: arrival to response
        e2e = float(r["served_ms"])
    elif sent is not None and r["resp_ts"] is not None:
        e2e = float(max(0, r["resp_ts"] - sent))
    ctl_wait = r.get("ctl_wait_ms")
    if r["status"] == _IN_FLIGHT and r.get("as_of") is not None:
        # still running as of the watermark `as_of`: its age so far; the part it waited at the controller behind
        # the key's previous request (its clock started later) is the controller queue time
        start = next((t for t in (sent, hand, r.get("received_ts")) if t is not None), None)
        if start is not None:
            e2e = float(max(0, r["as_of"] - start))
            ctl_wait = max(0, r["clock"] - start) or None
    return {
        "request": r["request"],
        "correlation_id": r["corr"],
        "controller_epoch": r["epoch"],
        "sent_ts": sent,
        "handling_ts": hand,
        "finished_ts": fin if fin is not None else None,
        "end_to_end_ms": e2e,
        "queue_ms": queue,
        "processing_ms": processing,
        "lock_wait_ms": lock,
        "partitions": r["partitions"],
        "status": r["status"],
        "controller_queue_ms": None if ctl_wait is None else float(ctl_wait),
        "pairing": r["pairing"],
        "flags": ",".join(sorted(set(flags))) or None,
        "anchor": r["anchor"],
        "first_row": bool(r.get("first", False)),
        **_breakdown(r),
        "served_ms": None if r.get("served_ms") is None else float(r["served_ms"]),
        "witnesses": ",".join(witnesses) or None,
    }


def _witnesses(r: dict[str, Any]) -> list[str]:
    """Which logs timed the request: the controller's (its send or response line), the broker's state-change log
    (a handling, finish or per-partition line), the broker's request log (its served line)."""
    out = []
    if r["sent_ts"] is not None or r["resp_ts"] is not None:
        out.append("controller_log")
    if r["handling_ts"] is not None or r.get("received_ts") is not None or r.get("logged_end"):
        out.append("broker_log")
    if r.get("served_ms") is not None:
        out.append("request_log")
    return out


def _breakdown(r: dict[str, Any]) -> dict[str, Any]:
    """The request log's components (BREAKDOWN_COLUMNS), null where it has none."""
    parts = r.get("breakdown") or {}
    return {name: parts.get(name) for name in BREAKDOWN_COLUMNS}
