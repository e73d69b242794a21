"""The FastAPI application: ``create_app()`` builds it; the lifespan opens the lake store (and the Alertmanager
pusher when configured) with the settings in effect, honouring ``app.dependency_overrides[get_settings]``.
``server_config()`` is how uvicorn serves it (`planewatch api` and the tests that serve it over a real socket)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from api.metrics import ApiMetrics, RequestMetrics
from api.public_paths import scrub_text
from api.push import AlertPusher
from api.routes import (
    alertmanager,
    alerts,
    brokers,
    cluster,
    clusters,
    control_requests,
    dashboard,
    docs,
    health,
    incidents,
    metrics,
    roll_safety,
    rolls,
    runbook,
)
from api.settings import Settings, get_settings
from api.store import LakeStore, TableUnavailable

__all__ = ["KEEP_ALIVE_S", "create_app", "server_config"]

log = logging.getLogger(__name__)

# How long an idle keep-alive connection stays open after a response (uvicorn's default is 5 s). A client reusing
# a connection the server closes at the same moment sees "Server disconnected without sending a response" (the
# HTTP keep-alive race). With 200 requests in flight on a loaded 2-core machine, the time between a response
# leaving the server and the next request arriving on that connection measured p99 1.4-5.6 s, max 5.8 s: past the
# 5 s default. 30 s outlasts that gap five times over and httpx's own idle expiry (5 s), so clients give up idle
# connections before the server does; an idle connection costs a socket and a few kB.
KEEP_ALIVE_S = 30
# Connections the kernel queues before uvicorn accepts them (uvicorn's default; Linux caps it at
# net.core.somaxconn, 4096 by default): ten times the 200 requests in flight the service is sized for.
BACKLOG = 2048


def _settings(app: FastAPI) -> Settings:
    provider = app.dependency_overrides.get(get_settings, get_settings)
    settings: Settings = provider()
    return settings


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the store; start the pusher if an Alertmanager URL is set; close both on shutdown."""
    settings = _settings(app)
    store = LakeStore(
        settings.lake,
        refresh_interval_s=settings.refresh_interval_ms / 1000,
        query_timeout_s=settings.query_timeout_s,
        background_reload=settings.background_reload,
    )
    app.state.store = store
    pusher: AlertPusher | None = None
    task: asyncio.Task[None] | None = None
    if settings.alertmanager_url:
        pusher = AlertPusher(store, settings)
        app.state.pusher = pusher
        task = asyncio.create_task(pusher.run(), name="alertmanager-push")
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if pusher is not None:
            await pusher.aclose()
        store.close()


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    """503 for a table that cannot be read now; the body names files relative to the lake (api.public_paths)."""
    assert isinstance(exc, TableUnavailable)
    log.info("%s %s: %s", request.method, request.url.path, exc)
    lake = request.app.state.store.lake
    return JSONResponse(
        status_code=503,
        content={"detail": scrub_text(str(exc), lake), "table": exc.table, "reason": scrub_text(exc.reason, lake)},
        headers={"Retry-After": "5"},
    )


def server_config(app: FastAPI, *, host: str, port: int, log_level: str = "info") -> uvicorn.Config:
    """How uvicorn serves `app`: one process, no access log, KEEP_ALIVE_S, BACKLOG, and no ``limit_concurrency``
    (past it uvicorn itself answers 503; requests beyond the thread pool wait for a thread instead). The lifespan
    is required ("on"): a store that cannot start stops the server instead of serving without one."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_S,
        backlog=BACKLOG,
        limit_concurrency=None,
    )


def create_app() -> FastAPI:
    """A new application (tests build one per test; `planewatch api` builds one per process)."""
    app = FastAPI(
        title="planewatch",
        summary="Kafka control-plane alerts, latencies and broker metrics, read from Delta.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by api.routes.docs with local assets (the machine may be offline)
        redoc_url=None,
    )
    app.add_exception_handler(TableUnavailable, _unavailable)
    app.state.metrics = ApiMetrics()  # GET /metrics (api.routes.metrics); requests counted by RequestMetrics
    app.add_middleware(RequestMetrics, metrics=app.state.metrics)
    app.include_router(health.router)
    app.include_router(docs.router)
    app.include_router(runbook.router)
    app.mount(docs.SWAGGER_URL, StaticFiles(directory=docs.SWAGGER_DIR), name="swagger")
    app.include_router(dashboard.page_router)
    for r in (alerts, incidents, brokers, control_requests, cluster, clusters, roll_safety, rolls, alertmanager,
              dashboard, metrics):
        app.include_router(r.router)
    return app
