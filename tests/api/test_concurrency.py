"""Many requests at once: every one answered, answers consistent while the lake stands still and while it moves;
api.memo computes each answer once however many requests ask for it at the same time."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
import uvicorn

from api.main import create_app
from api.memo import Memo
from api.settings import Settings, get_settings
from tests.api.conftest import AUTH, TOKEN
from tests.api.lake import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, T0, alert, control_request, samples, write

# Requests in flight at once (the load), and the bounds of each phase of the test.
IN_FLIGHT = 200
REQUESTS = 400
START_TIMEOUT_S = 30.0
PHASE_TIMEOUT_S = 120.0
COMMITS = 5  # alerts appended while the second phase runs, ALERTS_PER_COMMIT each
ALERTS_PER_COMMIT = 3

URLS = (
    "/alerts?status=open",
    "/alerts/a00004",
    "/control-requests",
    "/brokers",
    f"/brokers/1/metrics?name=RequestQueueSize&since={T0.isoformat()}&until=2026-11-20T13:00:00Z".replace("+", "%2B"),
    "/panels/open_alerts",
    "/panels/leader_and_isr_latency",
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The API in uvicorn on 127.0.0.1 (a real socket, the default thread pool), stopped after the test."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(20)])
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 100.0 * i) for i in range(12)])
    write(lake, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0, 600))
    app = create_app()
    settings = Settings.model_validate({"lake": lake, "api_token": TOKEN, "refresh_interval_ms": 0})
    app.dependency_overrides[get_settings] = lambda: settings
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (srv.started and srv.servers):
            assert thread.is_alive(), "the API stopped while starting"
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.02)
        port = srv.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", lake
    finally:
        srv.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "the API did not stop"


async def _burst(base: str, n: int) -> list[tuple[str, int, bytes]]:
    """n requests over URLS with IN_FLIGHT at once: (url, status, body) of each."""
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    async with httpx.AsyncClient(base_url=base, headers=AUTH, limits=limits, timeout=PHASE_TIMEOUT_S) as client:

        async def one(i: int) -> tuple[str, int, bytes]:
            url = URLS[i % len(URLS)]
            r = await client.get(url)
            return url, r.status_code, r.content

        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), PHASE_TIMEOUT_S)


def test_concurrent_requests_all_answered_and_consistent(server: tuple[str, Path]) -> None:
    base, lake = server
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        expected = {url: c.get(url) for url in URLS}
    assert {u: r.status_code for u, r in expected.items()} == dict.fromkeys(URLS, 200)

    # the lake stands still: every answer is the one a lone request got
    for url, status, body in asyncio.run(_burst(base, REQUESTS)):
        assert status == 200, (url, body[:300])
        assert json.loads(body) == expected[url].json(), url

    # the lake moves (alerts appended) while the requests run: every answer is whole and is one of the versions
    done = threading.Event()
    errors: list[BaseException] = []

    def append() -> None:
        try:
            for k in range(COMMITS):
                write(lake, ALERTS, [alert(100 + k * ALERTS_PER_COMMIT + j) for j in range(ALERTS_PER_COMMIT)])
        except BaseException as e:  # reported by the test, not lost in the thread
            errors.append(e)
        finally:
            done.set()

    writer = threading.Thread(target=append, name="lake-writer")
    writer.start()
    try:
        answers = asyncio.run(_burst(base, REQUESTS))
    finally:
        writer.join(timeout=PHASE_TIMEOUT_S)
    assert not errors
    versions = {20 + k * ALERTS_PER_COMMIT for k in range(COMMITS + 1)}
    for url, status, body in answers:
        assert status == 200, (url, body[:300])
        data = json.loads(body)
        if url == "/alerts?status=open":
            assert data["count"] in versions
            started = [a["started_at"] for a in data["data"]]
            assert started == sorted(started, reverse=True)
        elif url == "/panels/open_alerts":
            assert len(data["rows"]) in versions
        elif url == "/brokers":
            assert sum(b["open_alerts"] for b in data["data"]) in versions
        else:
            assert data == expected[url].json(), url  # what the appends do not touch answers as before
    # once the writes are done, every answer built from alerts shows the last version (no answer stays cached
    # past the table moving)
    final = 20 + COMMITS * ALERTS_PER_COMMIT
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        assert c.get("/alerts?status=open").json()["count"] == final
        assert len(c.get("/panels/open_alerts").json()["rows"]) == final
        assert sum(b["open_alerts"] for b in c.get("/brokers").json()["data"]) == final


def test_memo_computes_once_for_concurrent_callers() -> None:
    memo = Memo(entries=4)
    table = pa.table({"a": [1]})
    release = threading.Event()
    calls: list[int] = []

    def compute() -> str:
        calls.append(1)
        assert release.wait(10)
        return "answer"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(memo.get("k", (table,), compute))) for _ in range(20)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while not calls:  # the leader is computing; the others find its flight
        assert time.monotonic() < deadline
        time.sleep(0.01)
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert results == ["answer"] * 20
    assert len(calls) == 1
    # a new input object (the table moved) is a miss; the same object is a hit
    moved = pa.table({"a": [2]})
    assert memo.get("k", (moved,), lambda: "moved") == "moved"
    assert memo.get("k", (moved,), lambda: "not computed") == "moved"
    # inputs are held weakly: once gone, the entry is a miss
    del moved
    assert memo.get("k", (pa.table({"a": [3]}),), lambda: "fresh") == "fresh"
    # None stands for "no table" and matches only None
    assert memo.get("n", (None,), lambda: "none") == "none"
    assert memo.get("n", (None,), lambda: "not computed") == "none"
    assert memo.get("n", (table,), lambda: "table") == "table"


def test_memo_error_reaches_every_waiter_and_is_not_remembered() -> None:
    memo = Memo(entries=4)
    release = threading.Event()
    started = threading.Event()

    def fail() -> str:
        started.set()
        assert release.wait(10)
        raise RuntimeError("table moved under the query")

    outcomes: list[str] = []

    def ask() -> None:
        try:
            outcomes.append(memo.get("k", (), fail))
        except RuntimeError as e:
            outcomes.append(str(e))

    leader = threading.Thread(target=ask)
    leader.start()
    assert started.wait(10)
    followers = [threading.Thread(target=ask) for _ in range(5)]
    for t in followers:  # each either waits for the leader's flight or, arriving after it failed, fails itself
        t.start()
    release.set()
    for t in [leader, *followers]:
        t.join(timeout=10)
    assert outcomes == ["table moved under the query"] * 6
    assert memo.get("k", (), lambda: "recovered") == "recovered"
    assert len(memo) == 1
