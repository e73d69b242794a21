"""GET /health: how fresh each table is and whether the pipeline keeps up. Always open (no token)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter

from api.deps import SettingsDep, StoreDep
from api.models import HealthPublic, TableHealth
from api.public_paths import scrub_text
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_ROLLUPS_1M, METRIC_SAMPLES

router = APIRouter(tags=["health"])

# The tables the service serves, with the event-time column whose file statistics give "newest data".
HEALTH_TABLES: tuple[tuple[str, str], ...] = (
    (ALERTS.name, "last_seen_at"),
    (CONTROL_REQUEST_LATENCY.name, "sent_ts"),
    (METRIC_SAMPLES.name, "ts"),
    (METRIC_ROLLUPS_1M.name, "minute"),
)


@router.get("/health")
def health(store: StoreDep, settings: SettingsDep) -> HealthPublic:
    """Per table: version, row count, last commit and newest event time with their ages; `keeping_up` is false
    when an available table has not committed within `stale_after_s`. Missing tables make the status degraded."""
    now = datetime.now(UTC)
    tables: list[TableHealth] = []
    for name, tcol in HEALTH_TABLES:
        info = store.info(name, tcol)
        commit_age = (now - info.last_commit).total_seconds() if info.last_commit else None
        data_age = (now - info.newest_data).total_seconds() if info.newest_data else None
        tables.append(
            TableHealth(
                name=name,
                available=info.available,
                version=info.version,
                rows=info.rows,
                last_commit=info.last_commit,
                newest_data=info.newest_data,
                commit_age_s=commit_age,
                data_age_s=data_age,
                keeping_up=info.available and commit_age is not None and commit_age <= settings.stale_after_s,
                error=None if info.error is None else scrub_text(info.error, store.lake),
            )
        )
    available = [t for t in tables if t.available]
    keeping_up = bool(available) and all(t.keeping_up for t in available)
    status: Literal["ok", "degraded"] = "ok" if keeping_up and len(available) == len(tables) else "degraded"
    return HealthPublic(status=status, keeping_up=keeping_up, stale_after_s=settings.stale_after_s, tables=tables)


@router.get("/livez")
def livez() -> dict[str, str]:
    """Liveness: answers without touching the lake (for probes, and the benchmark's framework baseline)."""
    return {"status": "alive"}
