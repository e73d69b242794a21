"""`planewatch sql` (DataFusion over the lake, read-only, the panel files) and `planewatch api` as a process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from api.panels import SQL_DIR, Panel
from planewatch.cli import main
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import ALERTS, METRIC_ROLLUPS_1M, T0, alert, rollup, write
from tests.polling import wait_until

REPO = Path(__file__).resolve().parents[2]

START_TIMEOUT_S = 60.0


@pytest.fixture
def small_lake(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(5)] + [alert(7, type="ACCEPTOR_BLOCKED")])
    write(lake, METRIC_ROLLUPS_1M, [rollup(1, "RequestQueueSize", T0, 4.0)])
    return lake


def test_sql_json(small_lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q = 'SELECT "type", count(*) AS n FROM alerts GROUP BY "type" ORDER BY n DESC'
    assert main(["sql", q, "--lake", str(small_lake), "--format", "json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out == [{"type": "DELAYED_LEADER_AND_ISR", "n": 5}, {"type": "ACCEPTOR_BLOCKED", "n": 1}]


def test_sql_csv_and_table(small_lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q = "SELECT alert_id, started_at FROM alerts ORDER BY alert_id LIMIT 2"
    assert main(["sql", q, "--lake", str(small_lake), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "alert_id,started_at",
        "a00000,2026-11-20T12:00:00+00:00",
        "a00001,2026-11-20T12:01:00+00:00",
    ]
    assert main(["sql", q, "--lake", str(small_lake)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["alert_id", "|", "started_at"]
    assert lines[2].split() == ["a00000", "|", "2026-11-20T12:00:00+00:00"]


def test_every_panel_file_runs(small_lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.api.lake import CONTROL_REQUEST_LATENCY, INCIDENTS, control_request, incidents

    write(small_lake, CONTROL_REQUEST_LATENCY, [control_request(1, 1, 30.0)])
    write(small_lake, INCIDENTS, incidents([alert(7, type="ACCEPTOR_BLOCKED")]))
    for panel in Panel:
        rc = main(["sql", "--file", str(SQL_DIR / f"{panel.value}.sql"), "--lake", str(small_lake), "--format", "json"])
        assert rc == 0, panel
    out = capsys.readouterr().out
    assert '"correlation_id": 1' in out  # leader_and_isr_latency
    assert '"signal": "RequestQueueSize"' in out  # queue_sizes
    assert '"cause": "CONNECTION_STORM"' in out  # open_incidents


@pytest.mark.parametrize(
    "query",
    [
        "DROP TABLE alerts",
        "INSERT INTO alerts VALUES (1)",
        "SELECT 1; DELETE FROM alerts",
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/'",
        "-- only a comment",
    ],
)
def test_sql_is_read_only(small_lake: Path, query: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", query, "--lake", str(small_lake)]) == 2
    assert "planewatch sql:" in capsys.readouterr().err


def test_sql_bad_input(small_lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELECT * FROM metric_samples", "--lake", str(small_lake)]) == 2
    assert "no table metric_samples" in capsys.readouterr().err
    assert main(["sql", "SELECT nope FROM alerts", "--lake", str(small_lake)]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["sql", "--lake", str(small_lake)]) == 2


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _accepting(proc: subprocess.Popen[bytes], port: int, output: Callable[[], object]) -> bool:
    """Whether ``port`` accepts a connection; AssertionError with ``output()`` once ``proc`` has exited."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        assert proc.poll() is None, output()
        return False


@pytest.mark.integration
def test_planewatch_api_process(small_lake: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PLANEWATCH_API_TOKEN": "proc-secret"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "planewatch.cli", "api", "--lake", str(small_lake), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _accepting(proc, port, lambda: proc.stdout.read() if proc.stdout else b""),
                   START_TIMEOUT_S, "the API to listen", interval=0.2)
        assert _get(base + "/health")[0] == 200
        assert _get(base + "/alerts")[0] == 401
        status, body = _get(base + "/alerts?status=open", "proc-secret")
        data = json.loads(body)
        assert status == 200
        assert data["count"] == 6
        assert data["next_cursor"] is None
        assert b"<svg" not in _get(base + "/")[1]  # the page draws its SVG itself, in the browser
        assert _get(base + "/")[0] == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.integration
def test_cluster_against_a_reference_broker(make_client: ClientFactory, small_lake: Path, tmp_path: Path) -> None:
    """GET /cluster asks a real broker (the reference broker, over the Kafka protocol) which brokers are live."""
    data, control = _free_port(), _free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{data},CONTROLLER://127.0.0.1:{control}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "planewatch.cli",
            "broker",
            "--config",
            str(REPO / "conf" / "broker.properties"),
            "--override",
            f"listeners={listeners}",
            "--override",
            f"advertised.listeners={listeners}",
            "--override",
            f"log.dirs={tmp_path / 'data'}",
            "--seconds",
            "90",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _accepting(proc, data, lambda: "the broker exited"), START_TIMEOUT_S, "the broker to listen",
                   interval=0.2)
        cdir = tmp_path / "cluster"
        cdir.mkdir()
        (cdir / "cluster.json").write_text(
            json.dumps(
                {
                    "bootstrap.servers": f"127.0.0.1:{data}",
                    "brokers": [
                        {"id": 1, "pid": proc.pid, "listeners": listeners, "control.plane.listener.name": "CONTROLLER"},
                        {"id": 2, "pid": None, "listeners": "PLAINTEXT://127.0.0.1:1"},
                    ],
                }
            )
        )
        c = make_client(small_lake, cluster_dir=cdir)
        body = c.get("/cluster", headers=AUTH).json()
        assert body["metadata_error"] is None
        live = {b["id"]: b["live"] for b in body["brokers"]}
        assert live == {1: True, 2: False}
        assert body["brokers"][0]["listeners"]["CONTROLLER"] == f"127.0.0.1:{control}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
