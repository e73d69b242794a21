"""End to end on the session's Spark: files -> bronze/silver/quarantine/dq_results, reconciliation, restart, replay."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from jobs.run import observability
from jobs.run.observability import PipelineMetrics
from jobs.run.runner import run_pipeline
from jobs.run.settings import ObservabilitySettings
from schemas.dq import BYTES_EXPECTATION
from tests.lake_helpers import lake_rows, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

FIXTURE = Path("/work/shared/checks/fixture")
REPO_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"


def _records(root: Path, pattern: str) -> int:
    """Non-blank lines that start a record (stack-trace lines starting with a tab join the line before)."""
    return sum(
        1
        for f in root.glob(pattern)
        for line in f.read_bytes().split(b"\n")
        if line.strip() and not line.startswith(b"\t")
    )


def test_files_to_tables_reconcile_restart_and_replay(spark, tmp_path: Path) -> None:
    inp = tmp_path / "input"
    shutil.copytree(REPO_FIXTURE, inp)
    lake = tmp_path / "lake"
    settings = pipeline_settings(tmp_path, files=inp, max_bytes_per_batch=4096, quality={"sample_limit": 100})
    # the pipeline's own metrics (jobs.run.observability) see the run's batches: served here on a free port (the
    # run's settings serve none; the run stops this server when it ends, the registry stays readable)
    metrics = PipelineMetrics()
    observability.start(replace(settings, observability=ObservabilitySettings(0)), ("logs",), metrics)
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0

    raw = lake_rows(lake, "raw_logs")
    expected = _records(inp, "*/broker-*/*.log*")
    assert len(raw) == expected
    keys = [(r["source"], r["source_offset"]) for r in raw]
    assert len(set(keys)) == len(keys)
    assert {r["cluster"] for r in raw} == {"demo-cluster"}
    assert {r["broker_id"] for r in raw} == {1, 2, 3}
    # The 4 KiB budget made several micro-batches.
    assert len({r["batch_id"] for r in raw}) >= 2

    silver = lake_rows(lake, "state_change_events") + lake_rows(lake, "request_events")
    quarantine = lake_rows(lake, "quarantine")
    silver_keys = {(r["source"], r["source_offset"]) for r in silver}
    q_keys = {(r["source"], r["source_offset"]) for r in quarantine}
    assert not silver_keys & q_keys
    assert silver_keys | q_keys <= set(keys)
    assert any("this line is not a Kafka log line at all" in r["record"] for r in quarantine)
    # correlationId 17's Finished line made it to silver with its elapsed time.
    assert any(r["correlation_id"] == 17 and r["elapsed_ms"] == 13973 for r in silver)
    # Reconciliation per batch: raw == silver + quarantine + unused, and the batches cover every raw row.
    dq = lake_rows(lake, "dq_results")
    rec = [r for r in dq if r["suite"] == "reconciliation" and r["expectation"] != BYTES_EXPECTATION]
    assert rec
    assert all(r["success"] for r in rec)
    assert sum(r["element_count"] for r in rec) == len(raw)
    # Bytes too: after the last batch every byte of the log files was read (none waiting, none stuck).
    by_bytes = sorted((r for r in dq if r["expectation"] == BYTES_EXPECTATION), key=lambda r: r["batch_id"])
    assert [r["batch_id"] for r in by_bytes] == sorted({r["batch_id"] for r in rec})
    assert all(r["success"] and r["unexpected_count"] == 0 for r in by_bytes)
    assert by_bytes[-1]["element_count"] == sum(f.stat().st_size for f in inp.glob("*/broker-*/*.log*"))
    # ... and counted what the tables hold
    q = {"query": "ingest_logs_files"}
    value = metrics.registry.get_sample_value
    assert value("planewatch_batches_total", {**q, "outcome": "ok"}) == len({r["batch_id"] for r in raw})
    assert value("planewatch_batches_total", {**q, "outcome": "failed"}) == 0
    assert value("planewatch_records_read_total", q) == len(raw)
    assert value("planewatch_records_accepted_total", q) == len(silver)
    quarantined = [s for m in metrics.registry.collect() for s in m.samples
                   if s.name == "planewatch_records_quarantined_total"]
    assert sum(s.value for s in quarantined) == len(quarantine)
    newest = value("planewatch_input_newest_event_timestamp_seconds", {**q, "family": "logs",
                                                                        "cluster": "demo-cluster"})
    assert newest == max(r["ts"] for r in silver).timestamp()
    assert value("planewatch_last_commit_timestamp_seconds", {"table": "raw_logs"})

    # Restart after a crash that lost the last batch's commit, with a line appended meanwhile: Spark re-runs
    # the last batch (the sink writes nothing: the table versions stay), then reads only the new line.
    commits = tmp_path / "ck" / "ingest_logs_files" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    before = {t: len(lake_rows(lake, t)) for t in ("raw_logs", "state_change_events", "request_events", "quarantine")}
    log = inp / "demo-cluster" / "broker-2" / "state-change.log"
    extra = (
        "[2021-03-02 08:01:00,000] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 40 from "
        "controller 1 for 1 partitions (state.change.logger)\n"
    )
    with log.open("a") as fh:
        fh.write(extra)
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    after = {t: len(lake_rows(lake, t)) for t in before}
    assert after == {
        **before,
        "raw_logs": before["raw_logs"] + 1,
        "state_change_events": before["state_change_events"] + 1,
    }
    raw2 = lake_rows(lake, "raw_logs")
    assert len({(r["source"], r["source_offset"]) for r in raw2}) == len(raw2)
