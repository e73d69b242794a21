"""Alert lifecycle: candidate alerts + the currently open alerts + the batch's event-time watermark -> upserts.

Pure: no Spark, no Delta. The job reads the open alerts of the types it owns, calls `apply_lifecycle`, and MERGEs
the returned rows into `alerts` on `alert_id` (under a Delta app transaction, so a replayed batch writes nothing).

Rules (ARCHITECTURE.md section 3):
  * one OPEN alert per (type, cluster, broker_id, listener); a candidate for an open alert updates its
    `last_seen_at`, `value` (the worst seen), `severity` (the worst seen), `summary` and `evidence` (the latest);
  * a candidate with no open alert opens one, `started_at` = the candidate's event time and
    `alert_id` = hash(type, cluster, broker_id, listener, started_at): stable across replays;
  * an alert opened more than FOUND_LATE of processing time after its condition's event time says so in its
    evidence (`found_late_s`, kept while the alert lives): its input arrived late, or the pipeline was down and
    caught up (an incident of the gap is raised, marked, not lost);
  * hysteresis: an open alert resolves once its condition has been clear for `resolve_after` of event time, i.e.
    when the watermark (or the next candidate of the same key) is past `last_seen_at + resolve_after`;
    `resolved_at` = `last_seen_at + resolve_after`. A flapping signal therefore keeps one alert open.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

__all__ = ["FOUND_LATE", "SEVERITY_RANK", "Candidate", "alert_id", "apply_lifecycle"]

SEVERITY_RANK = {"warning": 1, "critical": 2}
# Evidence is for a human and the API: cap it so one alert row stays small.
MAX_EVIDENCE_CHARS = 16_384
# An alert opened this long after its condition's event time was found late. Live detection takes seconds (a
# trigger, the watermark delay of 10 s, pairing's 120 s timeout for a request that never completes, whose candidate
# carries the timeout's time): five minutes leaves all of that out and catches a pipeline that was down or a source
# that delivered late.
FOUND_LATE = timedelta(minutes=5)


@dataclass(frozen=True)
class Candidate:
    """One firing of a detector (a row of the detectors' output)."""

    type: str
    severity: str
    cluster: str
    broker_id: int | None
    listener: str | None
    ts: datetime
    value: float | None
    threshold: float | None
    summary: str
    evidence: Mapping[str, Any]  # a JSON object (pipelines.detection.candidates.Evidence), serialised here once

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        return (self.type, self.cluster, self.broker_id, self.listener)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Candidate:
        values: dict[str, Any] = {f: row.get(f) for f in cls.__dataclass_fields__}
        return cls(**values)


def alert_id(type_: str, cluster: str, broker_id: int | None, listener: str | None, started_at: datetime) -> str:
    """Stable id: hash of (type, cluster, broker_id, listener, started_at)."""
    raw = f"{type_}|{cluster}|{broker_id}|{listener}|{started_at.isoformat()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _worse(a: str | None, b: str | None) -> str:
    return max(a or "warning", b or "warning", key=lambda s: SEVERITY_RANK.get(s, 0))


def _evidence(c: Candidate, fired: int, found_late_s: float | None = None) -> str:
    data = dict(c.evidence)
    late = {} if found_late_s is None else {"found_late_s": round(found_late_s, 1)}
    doc = json.dumps({"firings": fired, **late, "latest": data}, default=str, sort_keys=True)
    return doc if len(doc) <= MAX_EVIDENCE_CHARS else doc[: MAX_EVIDENCE_CHARS - 20] + '..."(truncated)'


def _found_late_s(alert: Mapping[str, Any]) -> float | None:
    try:
        value = json.loads(alert.get("evidence") or "{}").get("found_late_s")
    except (ValueError, AttributeError, TypeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def _fired(alert: Mapping[str, Any]) -> int:
    try:
        return int(json.loads(alert.get("evidence") or "{}").get("firings", 1))
    except (ValueError, AttributeError, TypeError):
        return 1


def apply_lifecycle(
    open_alerts: Iterable[Mapping[str, Any]],
    candidates: Iterable[Candidate],
    watermark: datetime | None,
    resolve_after: timedelta,
    now: datetime,
) -> list[dict[str, Any]]:
    """Return the alert rows to upsert (new, updated or resolved), keyed by `alert_id`.

    Args:
        open_alerts: the `alerts` rows with status 'open' of the types this caller owns.
        candidates: this batch's detector output (any order; late ones are fine).
        watermark: event-time watermark of the batch (None: resolve nothing by time).
        resolve_after: hysteresis, event time the condition must stay clear before the alert resolves.
        now: processing time, written to `updated_at` only.
    """
    current: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in open_alerts:
        current[(row["type"], row["cluster"], row["broker_id"], row["listener"])] = dict(row)
    changed: dict[str, dict[str, Any]] = {}

    def resolve(a: dict[str, Any]) -> None:
        a["status"], a["resolved_at"], a["updated_at"] = "resolved", a["last_seen_at"] + resolve_after, now
        changed[a["alert_id"]] = a

    for c in sorted(candidates, key=lambda c: (c.ts, c.type, c.cluster, c.broker_id or -1, c.listener or "")):
        a: dict[str, Any] | None = current.get(c.key)
        if a is not None and c.ts > a["last_seen_at"] + resolve_after:
            resolve(a)  # clear for longer than the hysteresis: the new firing is a new incident
            a = None
        if a is None:
            a = {
                "alert_id": alert_id(c.type, c.cluster, c.broker_id, c.listener, c.ts),
                "type": c.type, "severity": c.severity, "status": "open", "cluster": c.cluster,
                "broker_id": c.broker_id, "listener": c.listener, "started_at": c.ts, "last_seen_at": c.ts,
                "resolved_at": None, "summary": c.summary,
                "evidence": _evidence(c, 1, (now - c.ts).total_seconds() if now - c.ts > FOUND_LATE else None),
                "value": c.value,
                "threshold": c.threshold, "updated_at": now,
            }
            current[c.key] = a
        else:
            worse_value = a["value"] is None or (c.value is not None and c.severity == _worse(a["severity"], c.severity)
                                                 and abs(c.value) >= abs(a["value"]))
            a["severity"] = _worse(a["severity"], c.severity)
            if c.ts >= a["last_seen_at"]:
                a["last_seen_at"] = c.ts
                a["summary"], a["evidence"] = c.summary, _evidence(c, _fired(a) + 1, _found_late_s(a))
            else:
                a["evidence"] = json.dumps({**json.loads(a["evidence"]), "firings": _fired(a) + 1}, sort_keys=True)
            if worse_value:
                a["value"], a["threshold"] = c.value, c.threshold
            a["updated_at"] = now
        changed[a["alert_id"]] = a
    if watermark is not None:
        for cur in current.values():
            if cur["status"] == "open" and watermark > cur["last_seen_at"] + resolve_after:
                resolve(cur)
    return sorted(changed.values(), key=lambda a: (a["started_at"], a["alert_id"]))
