"""GET /control-requests: paired controller->broker requests from control_request_latency."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import pyarrow as pa
from fastapi import APIRouter, Query, Response

from api.deps import DEFAULT_LIMIT, MAX_BROKER_ID, MAX_LIMIT, NAME_PATTERN, StoreDep, TokenGuard, bad_param, utc
from api.models import ControlRequestPublic, ControlRequestsPublic
from api.queries import control_requests_sql, filter_control_requests, rows
from api.snapshots import held_since
from schemas.events import ControlRequest, LatencyStatus
from schemas.tables import CONTROL_REQUEST_LATENCY

router = APIRouter(tags=["control-requests"], dependencies=[TokenGuard])

# Latencies above a day are not latencies any more; the bound keeps the float filter meaningful.
MAX_LATENCY_MS = 86_400_000.0


@router.get("/control-requests", response_model=ControlRequestsPublic)
def list_control_requests(
    store: StoreDep,
    cluster: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    broker_id: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID)] = None,
    request: ControlRequest | None = None,
    status: LatencyStatus | None = None,
    min_latency_ms: Annotated[float | None, Query(ge=0, le=MAX_LATENCY_MS, description="end_to_end_ms >=")] = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, description=f"rows, capped at {MAX_LIMIT}")] = DEFAULT_LIMIT,
) -> Response:
    """The newest control requests (by controller send time) matching the filters; `count` counts all matches
    since `covers_since`: the last hour's requests are held in memory; a `since` further back queries the lake."""
    since, until = utc(since, "since"), utc(until, "until")
    if since is not None and until is not None and until <= since:
        bad_param("until", "until must be after since", str(until))
    filters = {
        "cluster": cluster,
        "broker_id": broker_id,
        "request": request.value if request else None,
        "status": status.value if status else None,
        "min_latency_ms": min_latency_ms,
        "since": since,
        "until": until,
        "limit": min(limit, MAX_LIMIT),
    }

    snap = store.snapshot(CONTROL_REQUEST_LATENCY.name)
    held = held_since(snap)
    if since is not None and held is not None and since < held:  # older than the window held in memory
        page_sql, count_sql = control_requests_sql(CONTROL_REQUEST_LATENCY.name, **filters)  # type: ignore[arg-type]
        page = store.query(page_sql, [CONTROL_REQUEST_LATENCY.name])
        count = store.query(count_sql, [CONTROL_REQUEST_LATENCY.name])
        n = int(count.column(0)[0].as_py() or 0) if count.num_rows else 0
        data = [ControlRequestPublic.model_validate(r) for r in rows(page)]
        body = ControlRequestsPublic(data=data, count=n, covers_since=since)
        return Response(content=body.model_dump_json().encode(), media_type="application/json")

    def answer(snap: pa.Table) -> bytes:
        page, count = filter_control_requests(snap, **filters)  # type: ignore[arg-type]
        data = [ControlRequestPublic.model_validate(r) for r in rows(page)]
        covers = held_since(snap)
        return ControlRequestsPublic(data=data, count=count, covers_since=covers).model_dump_json().encode()

    key = ("list", *sorted(filters.items()))
    content = store.memo(CONTROL_REQUEST_LATENCY.name, key, answer)
    return Response(content=content, media_type="application/json")
