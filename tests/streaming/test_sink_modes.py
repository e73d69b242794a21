"""sink.mode delta-spark against delta-rs: the same input gives equal tables, the pairing's included; kill -9
mid-batch in delta-spark mode, then a restart, equals a clean delta-spark run."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.run.jars import session_has_delta
from jobs.run.runner import run_pipeline
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.streaming.test_crash_restart import BATCH_BYTES, _run_and_kill, _write_input

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow, pytest.mark.integration]

TABLES = ("raw_logs", "state_change_events", "request_events", "quarantine", "dq_results", "control_request_latency",
          "pairing_state")
# Columns stamped by the run (read time, batch numbering, wall-clock of a check or a write), not by the input.
RUN_COLUMNS = {"ingest_ts", "date", "batch_id", "run_ts", "duration_ms", "updated_at"}


def _snapshot(lake: Path) -> dict[str, list[tuple]]:
    out = {}
    for t in TABLES:
        rows = lake_rows(lake, t)
        out[t] = sorted(tuple(sorted((k, str(v)) for k, v in r.items() if k not in RUN_COLUMNS)) for r in rows)
    return out


@pytest.fixture(scope="module")
def clean_runs(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, list[tuple]]]]:
    """The input and the tables of one clean run per sink mode (delta-rs with its driver path for small batches)."""
    if not session_has_delta(spark):
        pytest.skip("delta-spark not fetched: python -m planewatch.kafka.artifacts fetch spark")
    tmp = tmp_path_factory.mktemp("sink-modes")
    inp = tmp / "input"
    _write_input(inp)
    snaps = {}
    for mode in ("delta-rs", "delta-spark"):
        settings = pipeline_settings(tmp / mode, files=inp, max_bytes_per_batch=BATCH_BYTES,
                                     quality={"enabled": False}, sink={"mode": mode})
        assert run_pipeline(spark, settings, families=("logs",)) == 0
        snaps[mode] = _snapshot(tmp / mode / "lake")
    return inp, snaps


def test_both_sink_modes_write_equal_tables(clean_runs) -> None:
    _inp, snaps = clean_runs
    assert len(snaps["delta-rs"]["raw_logs"]) == 372
    assert len(snaps["delta-rs"]["control_request_latency"]) == 120
    for t in TABLES:
        assert snaps["delta-spark"][t] == snaps["delta-rs"][t], t


def test_kill_9_mid_batch_then_restart_equals_clean_run_delta_spark(clean_runs, tmp_path: Path) -> None:
    inp, snaps = clean_runs
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"sources:\n  files:\n    path: {inp}\n    max_bytes_per_batch: {BATCH_BYTES}\n"
        "quality:\n  enabled: false\nsink:\n  mode: delta-spark\n"
    )
    lake, ck = tmp_path / "lake", tmp_path / "ck"

    def quarantine_files_written() -> bool:
        # delta-spark writes a batch's files into the table before its commit: the first quarantine file there
        # (not among the files staged under _pending for every table at once) means the batch's raw_logs and silver
        # rows are committed and its quarantine and dq rows are not (yet)
        from lake.sink import PENDING_DIR

        return any(PENDING_DIR not in p.parts for p in (lake / "quarantine").rglob("*.parquet"))

    assert _run_and_kill(cfg, lake, ck, quarantine_files_written) is None
    killed = _snapshot(lake)
    assert 0 < len(killed["raw_logs"]) < len(snaps["delta-spark"]["raw_logs"])
    assert _run_and_kill(cfg, lake, ck, None) == 0
    assert _snapshot(lake) == snaps["delta-spark"]
