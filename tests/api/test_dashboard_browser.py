"""The dashboard page in a real headless chromium: it loads, shows an alert the test wrote, draws its charts,
and logs no console errors. A screenshot is kept under the test's tmp dir (and copied to PLANEWATCH_SCREENSHOT
when set) for a person to look at."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import uvicorn

from api.main import create_app
from api.settings import Settings, get_settings
from tests.api.cdp import Browser, Page, chromium_path
from tests.api.conftest import TOKEN
from tests.api.lake import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    INCIDENTS,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    T0,
    alert,
    control_request,
    incidents,
    rollup,
    samples,
    write,
)
from tests.polling import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(chromium_path() is None, reason="chromium not installed (scripts/bootstrap.sh)"),
]
PAGE_TIMEOUT_S = 30.0
MARKER = "Browser-test alert: LeaderAndIsr to broker 2 waited 4321 ms"
OTHER = "Browser-test alert of another cluster"


def _rollups() -> list[dict[str, object]]:
    queues = [
        rollup(b, s, T0 + timedelta(minutes=m), float((m * (b + 1)) % 17))
        for b in range(3)
        for m in range(30)
        for s in ("RequestQueueSize", "ControlPlaneRequestQueueSize")
    ]
    idle = [
        rollup(b, "NetworkProcessorAvgIdlePercent", T0 + timedelta(minutes=m), 0.5 + 0.4 * ((m + b) % 2))
        for b in range(3)
        for m in range(30)
    ]
    acceptor = [
        rollup(
            b,
            "AcceptorBlockedPercent",
            T0 + timedelta(minutes=m),
            0.1 * (m % 5),
            listener="PLAINTEXT",
            attribute="OneMinuteRate",
        )
        for b in range(3)
        for m in range(30)
    ]
    return queues + idle + acceptor


def _samples() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for b in range(3):
        for s in ("RequestQueueSize", "ControlPlaneRequestQueueSize", "NetworkProcessorAvgIdlePercent"):
            out += samples(b, s, T0, 180, step_s=10.0)
        out += samples(
            b, "AcceptorBlockedPercent", T0, 180, step_s=10.0, listener="PLAINTEXT", attribute="OneMinuteRate"
        )
    return out


@pytest.fixture(params=["rollups", "samples-only"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The service over a lake with metric rollups (the panels' SQL), or with raw samples only (the page falls back
    to /brokers/{id}/metrics, downsampled in DataFusion)."""
    lake = tmp_path / "lake"
    alerts = [alert(i) for i in range(4)] + [alert(9, broker_id=2, summary=MARKER, severity="critical"),
                                             alert(20, cluster="c2", broker_id=7, summary=OTHER)]
    write(lake, ALERTS, alerts)
    if request.param == "rollups":  # the other lake has none: a lake older than incidents shows none, no error
        write(lake, INCIDENTS, incidents(alerts))
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 50.0 + 40 * (i % 7)) for i in range(60)])
    if request.param == "rollups":
        write(lake, METRIC_ROLLUPS_1M, _rollups())
        write(lake, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0, 60))
    else:
        write(lake, METRIC_SAMPLES, _samples())
    app = create_app()
    settings = Settings(lake=lake, api_token=TOKEN, refresh_interval_ms=0)
    app.dependency_overrides[get_settings] = lambda: settings
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    t = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    wait_until(lambda: srv.started, 20, "the API to start")
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(timeout=10)
    sock.close()


def test_dashboard_in_headless_chromium(server: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    browser = Browser(tmp_path / "chromium-profile")
    try:
        page = Page(browser.page_ws())
        try:
            for domain in ("Runtime", "Log", "Page"):
                page.call(f"{domain}.enable")
            page.call("Page.navigate", url=f"{server}/#token={TOKEN}")
            wait_until(lambda: page.evaluate("document.body && document.body.dataset.loaded"), PAGE_TIMEOUT_S,
                       lambda: f"the page to load (console errors: {page.errors()})", interval=0.2)
            assert page.evaluate("document.body.dataset.loaded") == "1", page.errors()
            text = page.evaluate("document.body.innerText")
            assert MARKER in text
            assert "DELAYED_LEADER_AND_ISR" in text
            # the token left the address bar and lives in sessionStorage
            assert page.evaluate("location.hash") == ""
            assert page.evaluate("sessionStorage.getItem('planewatch.token')") == TOKEN
            charts = page.evaluate(
                "Array.from(document.querySelectorAll('svg.chart')).map(s => s.getAttribute('aria-label'))"
            )
            assert {
                "queue (ms)",
                "processing (ms)",
                "lock wait (ms)",
                "RequestQueueSize",
                "ControlPlaneRequestQueueSize",
                "NetworkProcessorAvgIdlePercent",
            } <= set(charts)
            assert "AcceptorBlockedPercent (OneMinuteRate)" in charts
            lines = page.evaluate("document.querySelectorAll('#lai svg .series polyline').length")
            assert lines == 9  # 3 brokers x (queue, processing, lock wait)
            assert page.evaluate("document.querySelectorAll('svg.bars rect').length") == 4  # open alerts per broker
            # open incidents: broker 0's two alerts, broker 1's, broker 2's two apart (4 minutes between them), c2's
            shown = page.evaluate("document.querySelectorAll('[data-incident-id]').length")
            assert shown == (5 if request.node.callspec.id == "rollups" else 0)
            assert OTHER in text
            # one cluster chosen (GET /clusters lists both): the other's alerts and incidents leave the page
            options = page.evaluate("Array.from(document.querySelectorAll('#cluster option')).map(o => o.value)")
            assert options == ["", "c1", "c2"]
            page.evaluate("const s = document.getElementById('cluster'); s.value = 'c1';"
                          "s.dispatchEvent(new Event('change'))")
            wait_until(lambda: OTHER not in page.evaluate("document.body.innerText"), PAGE_TIMEOUT_S,
                       lambda: f"c2's alert to leave the page (console errors: {page.errors()})", interval=0.2)
            assert page.evaluate("document.querySelectorAll('svg.bars rect').length") == 3
            assert page.evaluate("document.querySelectorAll('[data-incident-id]').length") == shown - (shown > 0)
            assert page.evaluate("sessionStorage.getItem('planewatch.cluster')") == "c1"
            text = page.evaluate("document.body.innerText")
            assert ("SLOW_CONTROL_REQUEST" in text) == (shown > 0)
            if shown:  # an incident's timeline: its broker's control requests and queue/idle signals over its span
                page.evaluate("document.querySelector('button[data-timeline-of]').click()")
                wait_until(lambda: page.evaluate("document.querySelectorAll('.timeline svg.chart').length") == 5,
                           PAGE_TIMEOUT_S, lambda: f"the timeline (console errors: {page.errors()})", interval=0.2)
                labels = page.evaluate("Array.from(document.querySelectorAll('.timeline svg.chart'))"
                                       ".map(s => s.getAttribute('aria-label'))")
                assert labels == ["control requests", "RequestQueueSize", "ControlPlaneRequestQueueSize",
                                  "NetworkProcessorAvgIdlePercent", "RequestHandlerAvgIdlePercent"]
                assert page.evaluate("document.querySelectorAll('.timeline svg.requests g.req rect').length") > 0
            shot = page.call("Page.captureScreenshot", format="png")
            png = tmp_path / "dashboard.png"
            png.write_bytes(base64.b64decode(shot["data"]))
            if os.environ.get("PLANEWATCH_SCREENSHOT"):
                shutil.copy(
                    png, os.environ["PLANEWATCH_SCREENSHOT"].replace(".png", f"-{request.node.callspec.id}.png")
                )
            time.sleep(0.3)
            page.evaluate("1")  # drain late events
            assert page.errors() == []
        finally:
            page.close()
    finally:
        browser.close()


@pytest.mark.parametrize("server", ["rollups"], indirect=True)
def test_dashboard_asks_for_the_token(server: str, tmp_path: Path) -> None:
    """Without a token the page shows its token form; once entered, the data calls carry it and the page loads.
    The only console error allowed is the browser's note about the first, refused (401) data call."""
    browser = Browser(tmp_path / "chromium-profile")
    try:
        page = Page(browser.page_ws())
        try:
            for domain in ("Runtime", "Log", "Page"):
                page.call(f"{domain}.enable")
            page.call("Page.navigate", url=f"{server}/")
            shown = "getComputedStyle(document.getElementById('login')).display"
            wait_until(lambda: page.evaluate(shown) == "flex", PAGE_TIMEOUT_S, "the login form shown", interval=0.2)
            assert not page.evaluate("document.body.dataset.loaded")
            page.evaluate(
                f"document.getElementById('token').value = {TOKEN!r};"
                "document.getElementById('loginForm').requestSubmit()"
            )
            wait_until(lambda: page.evaluate("document.body.dataset.loaded"), PAGE_TIMEOUT_S, "the page to load",
                       interval=0.2)
            assert page.evaluate("document.body.dataset.loaded") == "1"
            assert MARKER in page.evaluate("document.body.innerText")
            assert page.evaluate(shown) == "none"
            errors = page.errors()
            assert errors, "the refused first call is expected to be logged"
            assert all("401" in e for e in errors), errors
        finally:
            page.close()
    finally:
        browser.close()


@pytest.mark.parametrize("server", ["rollups"], indirect=True)
def test_docs_render_offline(server: str, tmp_path: Path) -> None:
    """/docs renders Swagger UI from the service's own assets (no CDN): every operation shows, no console error."""
    browser = Browser(tmp_path / "chromium-profile")
    try:
        page = Page(browser.page_ws())
        try:
            for domain in ("Runtime", "Log", "Page"):
                page.call(f"{domain}.enable")
            page.call("Page.navigate", url=f"{server}/docs")
            count = "document.querySelectorAll('.opblock').length"
            wait_until(lambda: page.evaluate(count), PAGE_TIMEOUT_S,
                       lambda: f"the operations shown: {page.evaluate('document.body.innerText')[:500]}", interval=0.2)
            text = page.evaluate("document.body.innerText")
            assert page.evaluate(count) >= 10, text[:500]
            assert "/alerts/{alert_id}" in text
            assert page.errors() == []
        finally:
            page.close()
    finally:
        browser.close()
