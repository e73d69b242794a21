"""The catch-up benchmark's pure parts: the backfill (a stopped pipeline's gap, written on the generator's own
clock) and the batch summary read from the pipeline's log."""

from __future__ import annotations

from pathlib import Path

from benchmarks.catch_up import backfill, batches
from benchmarks.soak_load import KafkaOutput, Load

START = 1_800_000_000.0


def test_backfill_writes_the_gap_on_its_own_clock_with_its_incidents(tmp_path: Path) -> None:
    load = Load(brokers=3, lines_per_s=30.0, samples_per_s=8.0, incident_every_s=40.0, rotate_s=3600.0,
                scrape_retention_s=0.0)
    gen = KafkaOutput(tmp_path, load, START)
    try:
        incidents = backfill(gen, START, START + 120.0)
    finally:
        gen.close()
    # incidents at 20 s, 60 s, 100 s, each stamped on the simulated clock, not the wall clock
    assert [round(i.sent_at - START) for i in incidents] == [12, 52, 92]
    assert 30.0 * 120 * 0.9 <= gen.lines <= 30.0 * 120 * 1.1


def test_batches_of_the_pipeline_log(tmp_path: Path) -> None:
    log = tmp_path / "pipeline.log"
    log.write_text(
        "x INFO jobs.ingest.batch: ingest_logs_files batch 3: BatchReport(batch_id=3, raw=500000, silver={}, "
        "quarantine=0, unused=0, seconds=7.5, path='executors')\n"
        "x INFO jobs.ingest.batch: ingest_logs_files batch 4: BatchReport(batch_id=4, raw=600, silver={}, "
        "quarantine=0, unused=0, seconds=0.5, path='driver')\n"
        "x INFO jobs.detect.rules: ingest_logs_files batch 4: pairing 3 request row(s) {}, log rules 0 candidate(s)\n")
    assert batches(log) == {"ingest_logs_files": {"batches": 2, "max_raw": 500000, "max_s": 7.5, "total_s": 8.0}}
