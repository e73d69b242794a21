"""Property-based run over the OpenAPI schema (schemathesis): whatever the parameters, the service never answers
with a server error, and its 200 answers match their documented schemas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from api.main import create_app
from api.settings import Settings, get_settings
from tests.api.conftest import AUTH
from tests.api.conftest import TOKEN as _TOKEN
from tests.api.lake import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    T0,
    alert,
    control_request,
    rollup,
    samples,
    write,
)

# Examples per operation: enough to hit every parameter's edges (nulls, huge ints, odd strings), bounded in time.
MAX_EXAMPLES = 40


APP: FastAPI = create_app()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def running_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A lake with every table, and the app's lifespan entered (the store is open) for the whole module."""
    lake = tmp_path_factory.mktemp("st") / "lake"
    write(lake, ALERTS, [alert(i) for i in range(20)])
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 10.0 * i) for i in range(20)])
    write(lake, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0, 120))
    write(lake, METRIC_ROLLUPS_1M, [rollup(1, "RequestQueueSize", T0, 1.0)])
    s = Settings(lake=lake, api_token=_TOKEN, refresh_interval_ms=500, query_timeout_s=20)
    APP.dependency_overrides[get_settings] = lambda: s
    with TestClient(APP):
        yield


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors(case: schemathesis.Case[Any]) -> None:
    response = case.call(headers=AUTH)
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
