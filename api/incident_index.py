"""Which incident each alert belongs to (the `incidents` table's alert ids), for the Alertmanager shapes: the incident
id is a label, so an Alertmanager that groups by it pages once per cause."""

from __future__ import annotations

from api.store import LakeStore, TableMissing
from schemas.alerts import AlertStatus
from schemas.tables import INCIDENTS

__all__ = ["incident_index"]


def incident_index(store: LakeStore) -> dict[str, str] | None:
    """alert id -> incident id, over the open incidents and those resolved in the last day; None when the lake has
    no incidents table (one written by a pipeline older than incidents)."""
    sql = (f"SELECT incident_id, alert_ids FROM {INCIDENTS.name} WHERE status = '{AlertStatus.open.value}' "
           f"OR resolved_at >= now() - INTERVAL '1 day'")
    try:
        hits = store.query(sql, [INCIDENTS.name])
    except TableMissing:
        return None
    out: dict[str, str] = {}
    for iid, ids in zip(hits.column("incident_id").to_pylist(), hits.column("alert_ids").to_pylist(), strict=True):
        for aid in (ids or "").split(","):
            if aid:
                out[aid] = str(iid)
    return out
