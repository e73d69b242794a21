"""Which incident each alert belongs to (the `incidents` table's alert ids), for the Alertmanager shapes: the incident
id is a label, so an Alertmanager that groups by it pages once per cause, and the incident's cause, impact and action
describe the page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.store import LakeStore, TableMissing
from schemas.alerts import AlertStatus
from schemas.tables import INCIDENTS

__all__ = ["INCIDENT_FIELDS", "incident_fields", "incident_index"]

# What an alert row gains from its incident: incidents-table column -> the alert row's key.
INCIDENT_FIELDS = {"incident_id": "incident_id", "cause": "incident_cause", "summary": "incident_summary",
                   "impact": "incident_impact", "action": "incident_action"}


def incident_index(store: LakeStore) -> dict[str, dict[str, Any]] | None:
    """alert id -> its incident's INCIDENT_FIELDS, over the open incidents and those resolved in the last day; None
    when the lake has no incidents table (one written by a pipeline older than incidents)."""
    sql = (f"SELECT {', '.join(INCIDENT_FIELDS)}, alert_ids FROM {INCIDENTS.name} "
           f"WHERE status = '{AlertStatus.open.value}' OR resolved_at >= now() - INTERVAL '1 day'")
    try:
        hits = store.query(sql, [INCIDENTS.name])
    except TableMissing:
        return None
    out: dict[str, dict[str, Any]] = {}
    for row in hits.to_pylist():
        ref = {key: row[col] for col, key in INCIDENT_FIELDS.items()}
        for aid in (row["alert_ids"] or "").split(","):
            if aid:
                out[aid] = ref
    return out


def incident_fields(index: Mapping[str, Mapping[str, Any]] | None, alert_id: str) -> dict[str, Any]:
    """The INCIDENT_FIELDS of an alert (all None when it has no incident yet)."""
    ref = (index or {}).get(alert_id) or {}
    return {key: ref.get(key) for key in INCIDENT_FIELDS.values()}
