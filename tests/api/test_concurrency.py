"""Many requests at once: every one answered, answers consistent while the lake stands still and while it moves;
api.memo computes each answer once however many requests ask for it at the same time.

The server is configured as `planewatch api` runs it (api.main.server_config). The client retries a request once,
on a new connection, when the pooled keep-alive connection it reused had been closed by the server (as urllib3 and
browsers do for idempotent requests): on a loaded 2-core machine that race, not a dropped request, was what failed
this test with uvicorn's default 5 s keep-alive (``Server disconnected without sending a response``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

from api.memo import Memo
from tests.api.conftest import AUTH
from tests.api.lake import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, T0, alert, control_request, samples, write
from tests.api.serve import get_retrying_once, serve
from tests.polling import wait_until

# Requests in flight at once (the load), and the bounds of each phase of the test.
IN_FLIGHT = 200
REQUESTS = 400
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
    """The API in uvicorn on 127.0.0.1 (a real socket, the default thread pool, `planewatch api`'s configuration),
    stopped after the test."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(20)])
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 100.0 * i) for i in range(12)])
    write(lake, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0, 600))
    with serve(lake, refresh_interval_ms=0) as base:
        yield base, lake


async def _burst(base: str, n: int) -> list[tuple[str, int, bytes]]:
    """n requests over URLS with IN_FLIGHT at once: (url, status, body) of each (see get_retrying_once)."""
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    async with (
        httpx.AsyncClient(base_url=base, limits=limits, timeout=PHASE_TIMEOUT_S) as client,
        httpx.AsyncClient(base_url=base, limits=no_reuse, timeout=PHASE_TIMEOUT_S) as retry,
    ):

        async def one(i: int) -> tuple[str, int, bytes]:
            url = URLS[i % len(URLS)]
            r, _ = await get_retrying_once(client, retry, url, AUTH)
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


async def _stub_server(answered: int) -> tuple[asyncio.Server, str]:
    """An HTTP/1.1 server on 127.0.0.1 that answers the first `answered` requests of each connection (keep-alive)
    and then, as a server whose keep-alive timeout fired, closes the connection without answering."""
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError):  # the client closed the connection first
            for _ in range(answered):
                await reader.readuntil(b"\r\n\r\n")
                writer.write(ok)
                await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"


def test_a_get_on_a_connection_the_server_closed_is_retried_once_on_a_new_one() -> None:
    """The keep-alive race made deterministic: the server closes a reused connection instead of answering; the
    client sees "Server disconnected without sending a response" and retries on a new connection. A request that
    failed on a new connection is a real failure and is raised."""

    async def scenario() -> tuple[list[tuple[int, bool]], BaseException | None]:
        srv, base = await _stub_server(answered=1)
        closing, closing_base = await _stub_server(answered=0)
        no_reuse = httpx.Limits(max_keepalive_connections=0)
        async with (
            srv,
            closing,
            httpx.AsyncClient(base_url=base) as client,
            httpx.AsyncClient(base_url=base, limits=no_reuse) as retry,
        ):
            got = []
            for _ in range(2):  # the first opens the connection, the second reuses it and the server closes it
                r, retried = await get_retrying_once(client, retry, "/x", {})
                got.append((r.status_code, retried))
            try:
                async with httpx.AsyncClient(base_url=closing_base) as fresh:
                    await get_retrying_once(fresh, fresh, "/x", {})
            except httpx.RemoteProtocolError as e:
                return got, e
            return got, None

    got, error = asyncio.run(asyncio.wait_for(scenario(), PHASE_TIMEOUT_S))
    assert got == [(200, False), (200, True)]
    assert error is not None
    assert "without sending a response" in str(error)


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
    wait_until(lambda: calls, 10, "the leader computing")  # the others find its flight
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
