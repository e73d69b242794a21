"""An ingest batch's dq rows apart from Spark: per hard rule, Great Expectations' schedule and its error row, and the
record reconciliation."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.ingest.batch import BatchReport
from jobs.ingest.quality import IngestQuality
from jobs.run.settings import QualitySettings
from pipelines.quality import load_suite
from schemas.dq import GE_ERROR_PREFIX, RECONCILIATION_SUITE, RECORDS_EXPECTATION


def test_one_row_per_hard_rule_of_every_row_parsed() -> None:
    suite = load_suite("metric_samples")
    first, *rest = [e.name for e in suite.hard]
    rows = IngestQuality.rule_results("metric_samples", suite, {first: 2}, 5, 7)
    assert [r.expectation for r in rows] == [first, *rest]
    assert {(r.table_name, r.batch_id, r.suite, r.element_count) for r in rows} == {
        ("metric_samples", 7, "metric_samples:rows", 7)}
    assert [(r.success, r.unexpected_count) for r in rows] == [(False, 2)] + [(True, 0)] * len(rest)


def test_great_expectations_runs_at_most_once_per_interval_per_table() -> None:
    quality = IngestQuality(QualitySettings(ge_interval_s=60), ["metric_samples"])
    assert (quality.ge_due("metric_samples"), quality.ge_due("metric_samples")) == (True, False)
    assert quality.ge_due("request_events")  # each table has its own schedule
    every = IngestQuality(QualitySettings(ge_interval_s=0), ["metric_samples"])
    assert (every.ge_due("metric_samples"), every.ge_due("metric_samples")) == (True, True)


def test_a_sample_that_cannot_be_read_is_an_error_row(caplog: pytest.LogCaptureFixture) -> None:
    quality = IngestQuality(QualitySettings(sample_limit=9), ["metric_samples"])
    asked: list[int] = []

    def sample(limit: int) -> Any:
        asked.append(limit)
        raise OSError("gone")

    [row] = quality.sample_results("metric_samples", load_suite("metric_samples"), sample, 3)
    assert asked == [9]
    assert (row.suite, row.expectation, row.success) == ("metric_samples", f"{GE_ERROR_PREFIX}gone", False)
    assert (row.unexpected_count, row.element_count, row.batch_id) == (None, None, 3)
    assert "Great Expectations failed on metric_samples batch 3" in caplog.text


def test_suites_only_with_quality_on_and_only_those_that_load(caplog: pytest.LogCaptureFixture) -> None:
    assert IngestQuality(QualitySettings(enabled=False), ["metric_samples"]).suites() == {}
    suites = IngestQuality(QualitySettings(), ["metric_samples", "no_such_table"]).suites()
    assert list(suites) == ["metric_samples"]
    assert "no quality suite for no_such_table" in caplog.text


def test_the_record_reconciliation() -> None:
    report = BatchReport(4, raw=10, silver={"state_change_events": 6, "request_events": 1}, quarantine=2, unused=1)
    row = report.reconciliation("raw_logs")
    assert (row.table_name, row.batch_id, row.suite, row.expectation) == (
        "raw_logs", 4, RECONCILIATION_SUITE, RECORDS_EXPECTATION)
    assert (row.success, row.unexpected_count, row.element_count) == (True, 0, 10)
    report.unused = 0
    assert (report.reconciliation("raw_logs").success, report.reconciliation("raw_logs").unexpected_count) == (
        False, 1)
