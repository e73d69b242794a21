"""sink.mode delta-spark against delta-rs: the same input gives equal tables, the pairing's included.

(Each sink's exactly-once under kill -9 mid-batch: the default sink's in tests/streaming/test_crash_restart.py on a
directory and tests/streaming/test_object_store_lake.py on an object store; delta-spark's replay of a committed
batch: tests/lake/test_sink_delta_spark.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.run.jars import session_has_delta
from jobs.run.runner import run_pipeline
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.streaming.test_crash_restart import _write_input

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow, pytest.mark.integration]

# Four batches of the input (a delta-spark commit costs seconds each; the rows do not depend on the batching).
BATCH_BYTES = 16_000
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
