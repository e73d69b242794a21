"""`planewatch parse`: the console script end to end (the file source's splitter, the pipeline's engine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.pipelines.parsing.parse_helpers import FIXTURES

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
    # the non-Kafka last line is no continuation (no stack frame, no indent): a record of its own, rejected
    assert "this line is not a Kafka log line at all" in p.stderr
    assert p.stderr.strip().endswith("5 records: rejected 1, state_change 4")


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
    assert "rejected: record over the reader's length cap" in errs[2]  # the 3 MB line: cut, not garbage
    assert len(errs[2]) < 400
    assert errs[-1] == "planewatch parse: 4 records: rejected 3, state_change 1"


def test_missing_file() -> None:
    p = _run("/nonexistent/state-change.log")
    assert p.returncode == 2
    assert "no such file" in p.stderr


def test_kafka_lines_behind_a_foreign_loggers_prefix(tmp_path: Path) -> None:
    """A harness or shipper wrote its own time, level, class and thread before each Kafka line: no line of the file
    starts like a log4j line, yet every line is its own record and the Kafka line inside it parses."""
    kafka = ("[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId {c} from "
             "controller 1 for 960 partitions (state.change.logger)")
    prefixes = ("2024-05-10T09:12:44.101+0000 [main] INFO  com.acme.it.KafkaHarness - ",
                "I0510 09:12:44.101234  4242 harness.py:88] ",
                "May 10 09:12:44 host-1 kafka[4242]: <info> thread=pool-1 ")
    log = tmp_path / "broker-2" / "state-change.log"
    log.parent.mkdir()
    log.write_text("".join(p + kafka.format(c=i) + "\n" for i, p in enumerate(prefixes)) + "no kafka here\n")
    p = _run(str(log))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["event"], r["correlation_id"], r["broker_id"], r["partitions"]) for r in rows] == [
        ("leader_and_isr_handling", i, 2, 960) for i in range(3)]
    assert p.stderr.strip().endswith("4 records: rejected 1, state_change 3")  # never glued into one record
