"""GET /metrics: the API's own metrics and the lake's open incidents and alerts, in the text format the operator's
Prometheus scrapes (api.metrics), behind the bearer token as every data endpoint (Prometheus sends it with
`authorization: {credentials_file: ...}`)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from api.deps import StoreDep, TokenGuard
from api.metrics import CONTENT_TYPE, ApiMetrics

router = APIRouter(tags=["metrics"], dependencies=[TokenGuard])


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
def metrics(request: Request, store: StoreDep) -> Response:
    """Requests per route and status with their durations, open incidents by cluster and cause, open alerts by
    cluster and type (read from the lake at most every few seconds)."""
    registry: ApiMetrics = request.app.state.metrics
    return Response(content=registry.exposition(store), media_type=CONTENT_TYPE)
