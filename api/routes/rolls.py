"""POST /clusters/{cluster}/rolls (declare a roll), POST /clusters/{cluster}/rolls/{roll_id}/end, and GET
/clusters/{cluster}/rolls (the rolls of the last hours, declared or seen): api.roll_awareness."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from api.deps import NAME_PATTERN, SettingsDep, StoreDep, TokenGuard
from api.models import RollDeclaration, RollPublic, RollsPublic
from api.roll_awareness import declare_roll, end_roll, rolls_since
from pipelines.roll_awareness import Roll

router = APIRouter(tags=["rolls"], dependencies=[TokenGuard])

ROLL_ID_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"
# GET /clusters/{cluster}/rolls looks back at most this far (a week of stop lines is a few thousand rows).
MAX_ROLLS_LOOKBACK_H = 168


def _public(r: Roll) -> RollPublic:
    return RollPublic(cluster=r.cluster, roll_id=r.declared, started_at=r.started, last_restart_at=r.last_restart,
                      ended_at=r.ended, nodes=list(r.nodes), pace_s=r.pace_s, recovery_s=r.recovery_s,
                      description=r.describe())


@router.get("/clusters/{cluster}/rolls", response_model=RollsPublic)
def list_rolls(
    store: StoreDep,
    cluster: Annotated[str, Path(pattern=NAME_PATTERN)],
    hours: Annotated[float, Query(gt=0, le=MAX_ROLLS_LOOKBACK_H, description="how far back")] = 6.0,
) -> RollsPublic:
    """The cluster's rolls: declared (roll_steps) and seen from its brokers' stop lines, each with its pace and the
    time its symptoms are expected for (alerts they explain show `expected: rolling restart`)."""
    now = dt.datetime.now(dt.UTC)
    rolls = rolls_since(store, now - dt.timedelta(hours=hours), now, cluster)
    return RollsPublic(data=[_public(r) for r in sorted(rolls, key=lambda r: r.started, reverse=True)])


@router.post("/clusters/{cluster}/rolls", response_model=RollPublic, status_code=201)
def declare(
    store: StoreDep,
    settings: SettingsDep,
    cluster: Annotated[str, Path(pattern=NAME_PATTERN)],
    body: RollDeclaration,
) -> RollPublic:
    """Declare that a roll of the cluster starts now (the script that rolls calls it first): until it is ended (or
    for at most 4 hours), the symptoms a healthy roll causes are recorded as expected and not paged. Posting the same
    `roll_id` again declares nothing new."""
    now = dt.datetime.now(dt.UTC)
    roll_id = declare_roll(settings.lake, cluster, body.nodes, now, body.roll_id)
    found = [r for r in rolls_since(store, now - dt.timedelta(hours=MAX_ROLLS_LOOKBACK_H), now, cluster)
             if r.declared == roll_id]
    if not found:
        raise HTTPException(status_code=409, detail=f"roll {roll_id} was declared for another cluster")
    return _public(found[0])


@router.post("/clusters/{cluster}/rolls/{roll_id}/end", response_model=RollPublic,
             responses={404: {"description": "no declared roll with this id in this cluster"}})
def end(
    store: StoreDep,
    settings: SettingsDep,
    cluster: Annotated[str, Path(pattern=NAME_PATTERN)],
    roll_id: Annotated[str, Path(pattern=ROLL_ID_PATTERN)],
) -> RollPublic:
    """Declare the roll over now: its symptoms stay expected for its recovery time, then page again."""
    now = dt.datetime.now(dt.UTC)
    since = now - dt.timedelta(hours=MAX_ROLLS_LOOKBACK_H)
    if not any(r.declared == roll_id for r in rolls_since(store, since, now, cluster)):
        raise HTTPException(status_code=404, detail=f"no declared roll {roll_id} of {cluster}")
    end_roll(settings.lake, cluster, roll_id, now)
    return _public(next(r for r in rolls_since(store, since, now, cluster) if r.declared == roll_id))
