"""Alerts in Alertmanager's shape (API v2), and the pure plan of what to push to an Alertmanager.

Labels: ``alertname`` (the planewatch type), ``severity``, ``cluster``, ``broker_id``, ``listener`` (when set),
``incident_id`` (the incident it belongs to, when known: group by it to page once per cause),
``service="planewatch"``. Annotations: ``summary``, ``value``, ``threshold``, ``alert_id``, ``runbook_url`` (the
alert type's runbook, GET /runbook/{type}) and, once its incident is known, ``description`` (the incident's cause,
impact and action), ``incident_cause`` and ``incident_url``.
A firing alert's ``endsAt`` lies ``4 x resend interval`` ahead, as Prometheus does, so Alertmanager resolves it
by itself if planewatch goes away; a resolved alert's ``endsAt`` is its ``resolved_at``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["PushPlan", "description", "fingerprint", "labels", "plan_push", "to_alertmanager"]

# Prometheus sets endsAt = now + 4 x resend interval for firing alerts; we do the same.
ENDS_AT_RESENDS = 4


def labels(a: Mapping[str, Any]) -> dict[str, str]:
    """Alertmanager labels of an alerts-table row."""
    out = {"alertname": str(a["type"]), "service": "planewatch", "cluster": str(a["cluster"])}
    if a.get("severity"):
        out["severity"] = str(a["severity"])
    if a.get("broker_id") is not None:
        out["broker_id"] = str(a["broker_id"])
    if a.get("listener"):
        out["listener"] = str(a["listener"])
    if a.get("incident_id"):
        out["incident_id"] = str(a["incident_id"])
    return out


def fingerprint(lbls: Mapping[str, str]) -> str:
    """A stable 16-hex-digit id of a label set (Alertmanager fingerprints label sets too)."""
    h = hashlib.sha256("\x1f".join(f"{k}\x1e{v}" for k, v in sorted(lbls.items())).encode())
    return h.hexdigest()[:16]


def _utc(t: datetime | None, default: datetime) -> datetime:
    if t is None:
        return default
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t


def to_alertmanager(
    a: Mapping[str, Any], *, now: datetime, public_url: str, resend_interval: timedelta
) -> dict[str, Any]:
    """One alerts-table row as an Alertmanager v2 alert (gettable shape; the postable shape is a subset)."""
    lbls = labels(a)
    resolved = a.get("status") == "resolved"
    starts = _utc(a.get("started_at"), now)
    ends = (
        _utc(a.get("resolved_at"), _utc(a.get("last_seen_at"), now))
        if resolved
        else now + ENDS_AT_RESENDS * resend_interval
    )
    base = public_url.rstrip("/")
    annotations = {"summary": str(a.get("summary") or a["type"]), "alert_id": str(a["alert_id"]),
                   "runbook_url": f"{base}/runbook/{a['type']}"}
    for k in ("value", "threshold"):
        if a.get(k) is not None:
            annotations[k] = f"{a[k]:g}"
    if a.get("incident_id"):
        annotations["description"] = description(a)
        annotations["incident_cause"] = str(a.get("incident_cause") or "")
        annotations["incident_url"] = f"{base}/incidents/{a['incident_id']}"
    return {
        "labels": lbls,
        "annotations": annotations,
        "startsAt": starts,
        "endsAt": ends,
        "updatedAt": _utc(a.get("updated_at"), _utc(a.get("last_seen_at"), starts)),
        "generatorURL": f"{base}/alerts/{a['alert_id']}",
        "fingerprint": fingerprint(lbls | {"alert_id": str(a["alert_id"])}),
        "receivers": [],
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    }


def description(a: Mapping[str, Any]) -> str:
    """The alert's incident in a few sentences: its cause, what clients went through, what to do."""
    parts = [str(a.get("incident_summary") or a.get("incident_cause") or "")]
    if a.get("incident_impact"):
        parts.append(f"Impact: {a['incident_impact']}")
    if a.get("incident_action"):
        parts.append(f"Do: {a['incident_action']}")
    return "\n".join(p for p in parts if p)


@dataclass
class PushPlan:
    """What to send now, and the state to remember for the next round."""

    send: list[Mapping[str, Any]]
    state: dict[str, str] = field(default_factory=dict)


def plan_push(
    known: Mapping[str, str] | None, alerts: Iterable[Mapping[str, Any]], *, resend_all_open: bool
) -> PushPlan:
    """Choose which alerts to push.

    `known` maps alert_id -> status as last pushed (None on the first round: then open alerts are pushed and
    alerts already resolved are only remembered). Pushed: new alerts (open, or already resolved), alerts whose
    status changed, and, when `resend_all_open`, every open alert (Alertmanager wants firing alerts repeated).
    """
    send: list[Mapping[str, Any]] = []
    state: dict[str, str] = {}
    for a in alerts:
        aid, status = str(a["alert_id"]), str(a.get("status") or "open")
        state[aid] = status
        before = None if known is None else known.get(aid)
        if known is None:
            if status == "open":
                send.append(a)
        elif before != status or (resend_all_open and status == "open"):
            send.append(a)
    return PushPlan(send, state)
