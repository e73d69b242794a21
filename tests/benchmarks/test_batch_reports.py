"""benchmarks.batch_reports: the ingest batches' report lines of a pipeline log, read back."""

from __future__ import annotations

from benchmarks.batch_reports import BatchLine, parse, parse_all, stage_medians

LINE = ("2026-12-07 16:59:52,406 INFO jobs.ingest.batch: ingest_logs_kafka batch 41: BatchReport(batch_id=41, "
        "raw=3051, silver={'state_change_events': 1361, 'request_events': 0}, quarantine=0, unused=1690, "
        "seconds=7.655770709003264, path='driver', stages={'open': 0.2, 'read': 1.427, 'engine+files': 4.15, "
        "'detect': 1.533, 'ge:state_change_events': 0.494, 'dq': 0.052})")


def test_a_logged_report_and_a_records_message_read_the_same() -> None:
    expected = BatchLine("ingest_logs_kafka", 41, 3051, 7.655770709003264, "driver",
                         {"open": 0.2, "read": 1.427, "engine+files": 4.15, "detect": 1.533,
                          "ge:state_change_events": 0.494, "dq": 0.052})
    assert parse(LINE) == expected
    assert parse(LINE.split("jobs.ingest.batch: ", 1)[1]) == expected  # a logging handler's getMessage()


def test_lines_without_a_report_are_none() -> None:
    assert parse("2026-12-07 16:59:52,406 INFO jobs.detect.rules: ingest_logs_kafka batch 41: pairing 545 rows") is None
    assert parse("ingest_logs_kafka batch 41: BatchReport(batch_id=41)") is None  # no records, no seconds
    assert parse_all([LINE, "26/12/07 16:59:52 WARN ProcessingTimeExecutor: falling behind", LINE]) == [parse(LINE)] * 2


def test_stage_medians_over_the_batches_that_read_records() -> None:
    batches = [BatchLine("q", 1, 10, 2.0, "driver", {"read": 1.0, "detect": 0.5}),
               BatchLine("q", 2, 30, 4.0, "driver", {"read": 3.0}),
               BatchLine("q", 3, 0, 0.1, "driver", {"read": 0.1}),
               BatchLine("q", 4, 20, 3.0, "executors", {"read": 2.0, "detect": 1.5})]
    assert stage_medians(batches) == {"batches": 3, "records": 20, "seconds": 3.0, "read": 2.0, "detect": 0.5}
    assert stage_medians(batches, keep=lambda b: b.path == "executors")["detect"] == 1.5
    assert stage_medians([]) == {}
