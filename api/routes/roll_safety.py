"""GET /clusters/{cluster}/roll-safety: may the next broker be restarted now (api.roll_safety)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.deps import MAX_BROKER_ID, NAME_PATTERN, StoreDep, TokenGuard, utc
from api.models import RollSafetyPublic, RollThresholdsQuery
from api.roll_safety import cluster_verdict, verdict_json
from pipelines.roll_safety import RollThresholds

router = APIRouter(tags=["roll safety"], dependencies=[TokenGuard])


@router.get("/clusters/{cluster}/roll-safety", response_model=RollSafetyPublic,
            responses={503: {"description": "a table the verdict reads is unreadable"}})
def roll_safety(
    store: StoreDep,
    cluster: Annotated[str, Path(pattern=NAME_PATTERN)],
    thresholds: Annotated[RollThresholdsQuery, Query()],
    broker_id: Annotated[int | None, Query(ge=0, le=MAX_BROKER_ID, description="the broker to restart next")] = None,
    since: Annotated[datetime | None, Query(description="the last change made (a restart): every node must have "
                                                        "been scraped after it, else unknown")] = None,
) -> RollSafetyPublic:
    """The verdict (`safe` / `wait` / `unsafe` / `unknown`) with every check's signal, value, threshold and the
    age of its data, from the lake's newest metric samples, in-flight control requests and open alerts. Stale or
    missing data answers `unknown`, never `safe`."""
    v = cluster_verdict(store, cluster, datetime.now(UTC), RollThresholds(**thresholds.model_dump()), broker_id,
                        utc(since, "since"))
    return RollSafetyPublic.model_validate(verdict_json(v))
