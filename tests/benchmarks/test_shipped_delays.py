"""The shipped-delays benchmark's batch table: the two log queries' batches read from the pipeline's log lines."""

from __future__ import annotations

from benchmarks.shipped_delays import batch_stages

LINES = [
    "2026-12-07 15:01:10,596 INFO jobs.ingest.batch: ingest_logs_kafka batch 11: BatchReport(batch_id=11, raw=38, "
    "silver={'request_events': 38}, quarantine=0, unused=0, seconds=1.9566, path='driver', stages={'read': 1.544, "
    "'engine+files': 0.157, 'detect': 0.156, 'dq': 0.099})",
    "2026-12-07 15:01:13,360 INFO jobs.ingest.batch: ingest_logs_kafka batch 12: BatchReport(batch_id=12, raw=71, "
    "silver={'request_events': 71}, quarantine=0, unused=0, seconds=2.3414, path='driver', stages={'read': 1.601, "
    "'engine+files': 0.514})",
    "2026-12-07 15:01:14,000 INFO jobs.ingest.batch: ingest_logs_kafka batch 13: BatchReport(batch_id=13, raw=0, "
    "silver={}, quarantine=0, unused=0, seconds=0.2, path='driver', stages={'read': 0.1})",
    "2026-12-07 15:01:15,000 INFO jobs.ingest.batch: ingest_logs_files batch 4: BatchReport(batch_id=4, raw=5, "
    "silver={}, quarantine=0, unused=0, seconds=0.5, path='driver', stages={'read': 0.125})",
    "2026-12-07 15:01:16,000 INFO jobs.ingest.batch: ingest_metrics_files batch 4: BatchReport(batch_id=4, raw=5, "
    "silver={}, quarantine=0, unused=0, seconds=0.5, path='driver', stages={'read': 0.3})",
    "2026-12-07 15:01:17,000 INFO jobs.detect.rules: ingest_logs_kafka batch 12: pairing 0 request row(s)",
]


def test_the_log_queries_batches_that_read_records_by_their_medians() -> None:
    stages = batch_stages(LINES)
    assert set(stages) == {"ingest_logs_files", "ingest_logs_kafka"}
    kafka = stages["ingest_logs_kafka"]
    assert kafka["batches"] == 2  # the empty batch 13 left out
    assert kafka["records"] == 54.5
    assert round(kafka["seconds"], 3) == 2.149
    assert round(kafka["read_s"], 4) == 1.5725
    assert stages["ingest_logs_files"] == {"batches": 1, "records": 5, "seconds": 0.5, "read_s": 0.125}
