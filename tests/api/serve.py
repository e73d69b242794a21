"""The API served over a real socket on 127.0.0.1, configured as `planewatch api` serves it (api.main.server_config),
and a GET that retries once, on a new connection, a request whose reused keep-alive connection the server closed."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from api.main import create_app, server_config
from api.settings import Settings, get_settings
from tests.api.conftest import TOKEN
from tests.polling import wait_until

__all__ = ["get_retrying_once", "serve"]

# Bounds of the server's start and stop on a loaded 2-core machine (Delta and FastAPI imports are done by then).
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
# The trace event httpcore emits when a request opens a new TCP connection (absent: it reused a pooled one).
NEW_CONNECTION_EVENT = "connection.connect_tcp.started"
# What a request on a reused connection that the server closed meanwhile fails with: no response at all
# (RemoteProtocolError), the server's reset (ReadError) or a write into the closed socket (WriteError).
STALE_CONNECTION_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@contextlib.contextmanager
def serve(lake: Path, **settings: Any) -> Iterator[str]:
    """Serve the API over `lake` (token TOKEN, other settings as given) until the block ends; yields its base URL."""
    app = create_app()
    s = Settings.model_validate({"lake": lake, "api_token": TOKEN, **settings})
    app.dependency_overrides[get_settings] = lambda: s
    srv = uvicorn.Server(server_config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=srv.run, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        wait_until(lambda: (srv.started and bool(srv.servers)) or not thread.is_alive(), START_TIMEOUT_S, "API start")
        assert thread.is_alive(), "the API stopped while starting"
        port = srv.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_S)
        assert not thread.is_alive(), "the API did not stop"


async def get_retrying_once(
    client: httpx.AsyncClient, retry: httpx.AsyncClient, url: str, headers: Mapping[str, str]
) -> tuple[httpx.Response, bool]:
    """GET `url` with `client`; when it failed on a reused connection the server had closed (the keep-alive race),
    once more with `retry`, which keeps no connection (every request opens a new one), as urllib3 and browsers
    retry an idempotent request. A failure on a new connection is not retried. Returns (response, retried)."""
    events: list[str] = []

    async def trace(event: str, info: Mapping[str, Any]) -> None:
        events.append(event)

    try:
        return await client.get(url, headers=headers, extensions={"trace": trace}), False
    except STALE_CONNECTION_ERRORS:
        if NEW_CONNECTION_EVENT in events:
            raise
    return await retry.get(url, headers=headers), True
