"""Fixtures of the API tests: a lake of small real Delta tables and a TestClient with overridden settings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings, get_settings
from tests.api.lake import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    INCIDENTS,
    METRIC_SAMPLES,
    T0,
    alert,
    control_request,
    incidents,
    samples,
    write,
)

TOKEN = "test-token-not-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

ClientFactory = Callable[..., TestClient]


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """alerts (30) and their incidents (one per broker), control_request_latency (12), metric_samples (broker 1,
    10 minutes at 1 s)."""
    d = tmp_path / "lake"
    write(d, ALERTS, [alert(i) for i in range(30)])
    write(d, INCIDENTS, incidents([alert(i) for i in range(30)]))
    write(d, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 100.0 * i) for i in range(12)])
    write(d, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0, 600))
    return d


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[ClientFactory]:
    """Build a started TestClient over a lake with given settings; every client is closed after the test."""
    clients: list[TestClient] = []

    def make(lake: Path, **settings: object) -> TestClient:
        app = create_app()
        defaults = {"api_token": TOKEN, "refresh_interval_ms": 0, "background_reload": False}
        s = Settings.model_validate({"lake": lake, **defaults, **settings})
        app.dependency_overrides[get_settings] = lambda: s
        c = TestClient(app)
        c.__enter__()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@pytest.fixture
def client(make_client: ClientFactory, lake: Path) -> TestClient:
    return make_client(lake)
