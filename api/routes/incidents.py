"""GET /incidents and GET /incidents/{incident_id}: alerts grouped by broker and time span, each put down to one
cause (the gold table `incidents`, written by the pipeline's alert writers). A lake without the table (written by
a pipeline older than incidents, or none yet) has no incidents."""

from __future__ import annotations

from typing import Annotated, Any

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, HTTPException, Path, Query, Response

from api.deps import DEFAULT_LIMIT, MAX_BROKER_ID, MAX_LIMIT, NAME_PATTERN, StoreDep, TokenGuard
from api.models import IncidentDetail, IncidentPublic, IncidentsPublic
from api.public_paths import scrub_text
from api.queries import name_literal, parse_evidence, rows
from api.routes.alerts import ID_PATTERN, to_public
from api.store import LakeStore, TableMissing
from schemas.alerts import AlertStatus, IncidentCause
from schemas.tables import ALERTS, INCIDENTS

router = APIRouter(tags=["incidents"], dependencies=[TokenGuard])


def _public(row: dict[str, Any], lake: str) -> dict[str, Any]:
    row = dict(row)
    row["evidence"] = parse_evidence(row.get("evidence"))
    for key in ("alert_types", "alert_ids"):
        row[key] = [x for x in (row.get(key) or "").split(",") if x]
    if isinstance(row.get("summary"), str):
        row["summary"] = scrub_text(row["summary"], lake)
    return row


def _query(store: LakeStore, sql: str) -> pa.Table | None:
    """`sql` over the incidents table; None when the lake has no such table."""
    try:
        return store.query(sql, [INCIDENTS.name])
    except TableMissing:
        return None


def _where(status: AlertStatus | None, cause: IncidentCause | None, cluster: str | None,
           broker_id: int | None) -> str:
    """The SQL filter of the query parameters (each validated by its type or pattern before it gets here)."""
    conds = ["TRUE"]
    if status is not None:
        conds.append(f"status = '{status.value}'")
    if cause is not None:
        conds.append(f"cause = '{cause.value}'")
    if cluster is not None:
        conds.append(f"cluster = {name_literal(cluster)}")
    if broker_id is not None:
        conds.append(f"broker_id = {int(broker_id)}")
    return " AND ".join(conds)


@router.get("/incidents", response_model=IncidentsPublic)
def list_incidents(
    store: StoreDep,
    status: AlertStatus | None = None,
    cause: IncidentCause | None = None,
    cluster: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    broker_id: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID)] = None,
    limit: Annotated[int, Query(ge=1, description=f"page size, capped at {MAX_LIMIT}")] = DEFAULT_LIMIT,
) -> Response:
    """Incidents, newest `started_at` first: each groups one broker's alerts of one time span (the cluster's, for
    alerts about no broker) under one cause, with what to do."""
    where = _where(status, cause, cluster, broker_id)
    page = _query(store, f"SELECT * FROM {INCIDENTS.name} WHERE {where} "
                         f"ORDER BY started_at DESC, incident_id LIMIT {min(limit, MAX_LIMIT)}")
    count = _query(store, f"SELECT count(*) AS n FROM {INCIDENTS.name} WHERE {where}")
    n = int(count.column(0)[0].as_py() or 0) if count is not None and count.num_rows else 0
    data = [] if page is None else [IncidentPublic.model_validate(_public(r, store.lake)) for r in rows(page)]
    return Response(content=IncidentsPublic(data=data, count=n).model_dump_json().encode(),
                    media_type="application/json")


@router.get("/incidents/{incident_id}", response_model=IncidentDetail,
            responses={404: {"description": "no incident with this id"}})
def get_incident(store: StoreDep, incident_id: Annotated[str, Path(pattern=ID_PATTERN)]) -> Response:
    """One incident with its member alerts (the symptoms, with their evidence)."""
    hit = _query(store, f"SELECT * FROM {INCIDENTS.name} WHERE incident_id = '{incident_id}'")
    if hit is None or hit.num_rows == 0:
        raise HTTPException(status_code=404, detail=f"no incident {incident_id}")
    incident = _public(rows(hit.slice(0, 1))[0], store.lake)
    ids = pa.array(incident["alert_ids"], pa.string())

    def members(snap: pa.Table) -> list[dict[str, Any]]:
        return rows(snap.filter(pc.fill_null(pc.is_in(snap["alert_id"], ids), False)).sort_by("started_at"))

    alerts = [to_public(r, store.lake) for r in members(store.snapshot(ALERTS.name))]
    body = IncidentDetail.model_validate({**incident, "members": alerts})
    return Response(content=body.model_dump_json().encode(), media_type="application/json")
