"""`planewatch parse`: the console script end to end (Python engine), and the Spark engine giving the same rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planewatch.cli import main
from tests.pipelines.parse_helpers import FIXTURES

PW = [sys.executable, "-m", "planewatch.cli"]
BROKER2 = FIXTURES / "checks-fixture/demo-cluster/broker-2"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PW, "parse", *args], capture_output=True, text=True, timeout=120, check=False)


def test_state_change_file() -> None:
    p = _run("--kind", "state-change", str(BROKER2 / "state-change.log"))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["event"], r["correlation_id"], r["broker_id"]) for r in rows] == [
        ("leader_and_isr_handling", 17, 2), ("fetchers_stopped", 17, 2), ("leader_and_isr_finished", 17, 2),
        ("metadata_cache_updated", 18, 2)]
    finished = rows[2]
    assert (finished["table"], finished["ts"], finished["elapsed_ms"], finished["partitions"]) == (
        "state_change_events", "2021-03-02T08:00:14.977000Z", 13973, 960)
    # the non-Kafka last line does not start like a log4j line: it continues the record before it
    assert rows[3]["message"].endswith("\nthis line is not a Kafka log line at all")
    assert p.stderr.strip().endswith("4 records: state_change 4")


def test_request_and_metrics_files() -> None:
    p = _run("--kind", "request", str(BROKER2 / "kafka-request.log"))
    (row,) = [json.loads(line) for line in p.stdout.splitlines()]
    assert (row["table"], row["api_name"], row["correlation_id"], row["total_time_ms"], row["log_format"]) == (
        "request_events", "LeaderAndIsr", 17, 13974.2, "json")
    p = _run("--kind", "metrics", *sorted(str(f) for f in (BROKER2 / "metrics").glob("*.prom")))
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(rows) == 12
    assert {r["signal"] for r in rows} == {"RequestQueueSize", "ControlPlaneRequestQueueSize",
                                           "NetworkProcessorAvgIdlePercent"}
    assert "unused 12" in p.stderr


def test_bad_input_goes_to_stderr_with_reasons(tmp_path: Path) -> None:
    bad = tmp_path / "broker-4" / "state-change.log"
    bad.parent.mkdir()
    bad.write_bytes(b"\xff\xfe garbage\n[2021-13-45 08:00:01,010] INFO x (state.change.logger)\n"
                    + b"[2021-03-02 08:00:01,010] INFO " + b"z" * 3_000_000 + b"\n"
                    + b"[2021-03-02 08:00:01,010] INFO [Broker id=4] Deleting 3 partition(s). (state.change.logger)\n")
    p = _run(str(bad))
    assert p.returncode == 0
    (row,) = [json.loads(line) for line in p.stdout.splitlines()]
    assert (row["event"], row["broker_id"], row["partitions"]) == ("kraft_partitions_deleting", 4, 3)
    errs = p.stderr.splitlines()
    assert errs[0].startswith(f"{bad}:0: rejected: no recognisable log4j layout: '\ufffd\ufffd garbage'")
    assert errs[1].startswith(f"{bad}:11: rejected: unparseable timestamp: 2021-13-45 08:00:01,010")
    assert "rejected: no recognisable log4j layout" in errs[2]
    assert len(errs[2]) < 400
    assert errs[-1] == "planewatch parse: 4 records: rejected 3, state_change 1"


def test_missing_file() -> None:
    p = _run("/nonexistent/state-change.log")
    assert p.returncode == 2
    assert "no such file" in p.stderr


@pytest.mark.spark
def test_spark_engine_prints_the_same_rows(spark, capsys) -> None:
    files = [str(BROKER2 / "state-change.log"), str(BROKER2 / "kafka-request.log"),
             str(FIXTURES / "samples/01_state-change_2.6-era_default_INFO_KAFKA-8470.log")]

    def rows(engine: str) -> list[dict]:
        assert main(["parse", "--engine", engine, *files]) == 0
        out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        for r in out:
            r.pop("ingest_ts")
        return out

    python_rows = rows("python")
    assert len(python_rows) == 12
    assert rows("spark") == python_rows
