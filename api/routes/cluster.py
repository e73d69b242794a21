"""GET /cluster: the reference cluster next to the service (--cluster-dir), read from the cluster itself."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from api.cluster_info import ClusterError, describe_cluster
from api.deps import SettingsDep, TokenGuard
from api.models import ClusterPublic

router = APIRouter(tags=["cluster"], dependencies=[TokenGuard])


@router.get(
    "/cluster",
    responses={404: {"description": "the service runs without --cluster-dir"}, 503: {"description": "no cluster.json"}},
)
def cluster(settings: SettingsDep) -> ClusterPublic:
    """Brokers (live or not), their data and control listeners, partition leaders and Prometheus endpoints.
    Leaders come from a Metadata request to the brokers (bounded timeout); if that fails, `metadata_error` says
    why and the rest comes from cluster.json."""
    if settings.cluster_dir is None:
        raise HTTPException(status_code=404, detail="no cluster directory configured (start with --cluster-dir)")
    try:
        return ClusterPublic.model_validate(describe_cluster(settings.cluster_dir))
    except ClusterError as e:
        raise HTTPException(status_code=503, detail=str(e))
