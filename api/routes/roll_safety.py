"""GET /clusters/{cluster}/roll-safety: may the next broker be restarted now (api.roll_safety)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from api.deps import MAX_BROKER_ID, NAME_PATTERN, SettingsDep, StoreDep, TokenGuard, utc
from api.kafka_admin import AdminConfigError, load_admin_clusters
from api.models import RollSafetyPublic, RollThresholdsQuery
from api.roll_safety import cluster_verdict, verdict_json
from pipelines.roll_safety import RollThresholds

router = APIRouter(tags=["roll safety"], dependencies=[TokenGuard])


@router.get("/clusters/{cluster}/roll-safety", response_model=RollSafetyPublic,
            responses={503: {"description": "a table the verdict reads is unreadable"}})
def roll_safety(
    store: StoreDep,
    settings: SettingsDep,
    cluster: Annotated[str, Path(pattern=NAME_PATTERN)],
    thresholds: Annotated[RollThresholdsQuery, Query()],
    broker_id: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID, description="the broker to restart next")] = None,
    restarted_broker: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID, description="the node restarted last: "
                                                  "with an Admin API connection, it must be back in every ISR")] = None,
    since: Annotated[datetime | None, Query(description="the last change made (a restart): every node must have "
                                                        "been scraped after it, else unknown")] = None,
) -> RollSafetyPublic:
    """The verdict (`safe` / `wait` / `unsafe` / `unknown`) with every check's signal, value, threshold and the
    age of its data, from the lake's newest metric samples, in-flight control requests and open alerts, and, when
    an Admin API connection is configured for the cluster, from the cluster itself: the partitions restarting
    `broker_id` would take offline or below min.insync.replicas, its replicas back in sync, the controller
    quorum. Stale or missing data, or a cluster that cannot be described, answers `unknown`, never `safe`."""
    admin = None
    if settings.admin_clusters is not None:
        try:
            admin = load_admin_clusters(settings.admin_clusters)
        except AdminConfigError as e:
            raise HTTPException(500, f"admin connections: {e}") from None
    v = cluster_verdict(store, cluster, datetime.now(UTC), RollThresholds(**thresholds.model_dump()), broker_id,
                        utc(since, "since"), admin, restarted_broker)
    return RollSafetyPublic.model_validate(verdict_json(v))
