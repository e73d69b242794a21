"""GET /alerts (filters, keyset pagination) and GET /alerts/{alert_id}."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, HTTPException, Path, Query, Response

from api.deps import DEFAULT_LIMIT, MAX_BROKER_ID, MAX_LIMIT, NAME_PATTERN, StoreDep, TokenGuard, bad_param, utc
from api.models import AlertPublic, AlertsPublic
from api.public_paths import scrub_text, scrub_value
from api.queries import AlertFilter, CursorError, decode_cursor, filter_alerts, parse_evidence, rows
from api.roll_awareness import annotate
from schemas.alerts import AlertStatus, Severity
from schemas.tables import ALERTS

router = APIRouter(tags=["alerts"], dependencies=[TokenGuard])

TYPE_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,200}$"


def to_public(row: dict[str, Any], lake: str) -> AlertPublic:
    """An alerts-table row as the API shows it: evidence parsed, file paths in it and in the summary relative to
    the lake or cut to their last parts (detection writes the absolute path of a line's log file as `source`)."""
    row = dict(row)
    row["evidence"] = scrub_value(parse_evidence(row.get("evidence")), lake)
    if isinstance(row.get("summary"), str):
        row["summary"] = scrub_text(row["summary"], lake)
    return AlertPublic.model_validate(row)


@router.get("/alerts", response_model=AlertsPublic)
def list_alerts(
    store: StoreDep,
    status: AlertStatus | None = None,
    type: Annotated[str | None, Query(pattern=TYPE_PATTERN, description="alert type, e.g. ACCEPTOR_BLOCKED")] = None,
    cluster: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    broker_id: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID)] = None,
    severity: Severity | None = None,
    since: Annotated[datetime | None, Query(description="alerts last seen at or after this time")] = None,
    until: Annotated[datetime | None, Query(description="alerts started before this time")] = None,
    limit: Annotated[int, Query(ge=1, description=f"page size, capped at {MAX_LIMIT}")] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page")] = None,
) -> Response:
    """Alerts, newest `started_at` first, one page at a time. The cursor is a keyset position, so pages stay
    stable while the pipeline writes new alerts (new ones appear before the first page, never inside a walk)."""
    since, until = utc(since, "since"), utc(until, "until")
    if since is not None and until is not None and until <= since:
        bad_param("until", "until must be after since", str(until))
    position = None
    if cursor is not None:
        try:
            position = decode_cursor(cursor)
        except CursorError as e:
            bad_param("cursor", str(e), cursor)
    f = AlertFilter(
        status=status.value if status else None,
        type=type,
        cluster=cluster,
        broker_id=broker_id,
        severity=severity.value if severity else None,
        since=since,
        until=until,
    )

    def answer(snap: pa.Table) -> tuple[list[dict[str, Any]], int, str | None]:
        page, count, next_cursor = filter_alerts(snap, f, position, min(limit, MAX_LIMIT))
        return rows(page), count, next_cursor

    page, count, next_cursor = store.memo(ALERTS.name, ("list", f, position, min(limit, MAX_LIMIT)), answer)
    data = [to_public(r, store.lake) for r in annotate(store, page, datetime.now(UTC))]
    body = AlertsPublic(data=data, count=count, next_cursor=next_cursor)
    return Response(content=body.model_dump_json().encode(), media_type="application/json")


@router.get(
    "/alerts/{alert_id}", response_model=AlertPublic, responses={404: {"description": "no alert with this id"}}
)
def get_alert(store: StoreDep, alert_id: Annotated[str, Path(pattern=ID_PATTERN)]) -> Response:
    """One alert with its evidence (the rows and numbers that made it fire), parsed from JSON."""

    def answer(snap: pa.Table) -> list[dict[str, Any]]:
        hit = snap.filter(pc.fill_null(pc.equal(snap["alert_id"], alert_id), False))
        return rows(hit.slice(0, 1))

    found = store.memo(ALERTS.name, ("one", alert_id), answer)
    if not found:
        raise HTTPException(status_code=404, detail=f"no alert {alert_id}")
    row = annotate(store, found, datetime.now(UTC))[0]
    return Response(content=to_public(row, store.lake).model_dump_json().encode(), media_type="application/json")
