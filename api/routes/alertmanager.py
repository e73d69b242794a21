"""GET /api/v2/alerts: planewatch's alerts in Alertmanager's API v2 shape, for tools that speak it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, Query

from api.alertmanager import to_alertmanager
from api.deps import SettingsDep, StoreDep, TokenGuard
from api.incident_index import incident_fields, incident_index
from api.models import AlertmanagerAlert
from api.queries import rows as to_rows
from schemas.tables import ALERTS

router = APIRouter(tags=["alertmanager"], dependencies=[TokenGuard])

# Alerts returned at most (newest first), as Alertmanager itself would hold a bounded set.
MAX_AM_ALERTS = 1000


@router.get("/api/v2/alerts")
def alertmanager_alerts(
    store: StoreDep,
    settings: SettingsDep,
    active: Annotated[bool, Query(description="include firing (open) alerts")] = True,
    resolved: Annotated[bool, Query(description="include resolved alerts (endsAt = resolved_at)")] = False,
) -> list[AlertmanagerAlert]:
    """Open alerts (and, with `resolved=true`, resolved ones) as Alertmanager `gettableAlert`s, newest first."""
    snap = store.snapshot(ALERTS.name)
    wanted = [s for s, on in (("open", active), ("resolved", resolved)) if on]
    if not wanted or snap.num_rows == 0:
        return []
    mask = pc.fill_null(pc.is_in(snap["status"], value_set=pa.array(wanted)), False)
    index = incident_index(store)
    rows = [{**r, **incident_fields(index, r["alert_id"])} for r in to_rows(snap.filter(mask).slice(0, MAX_AM_ALERTS))]
    now = datetime.now(UTC)
    resend = timedelta(seconds=settings.resend_interval_s)
    return [
        AlertmanagerAlert.model_validate(
            to_alertmanager(r, now=now, public_url=settings.public_url, resend_interval=resend)
        )
        for r in rows
    ]
