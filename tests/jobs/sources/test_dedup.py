"""The `duplicates` dq rows of a de-duplicating query's batch, from its progress (jobs.sources.dedup)."""

from __future__ import annotations

import datetime as dt

from jobs.sources.dedup import dedup_results, horizon_off
from schemas.dq import DEDUP_BALANCE_EXPECTATION, DEDUP_EXPECTATION

NOW = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)


def _progress(kept: int, dropped: int, late: int = 0) -> dict[str, object]:
    return {"batchId": 7, "stateOperators": [{"numRowsUpdated": kept, "numRowsDroppedByWatermark": late,
                                              "customMetrics": {"numDroppedDuplicateRows": dropped}}]}


def test_a_batch_counts_its_duplicates_and_balances_read_against_raw_plus_duplicates() -> None:
    counted, balance = dedup_results(_progress(10, 3), 10, "raw_logs", NOW)
    assert (counted.expectation, counted.batch_id, counted.unexpected_count, counted.element_count) == (
        DEDUP_EXPECTATION, 7, 3, 13)
    assert (balance.expectation, balance.success, balance.unexpected_count) == (DEDUP_BALANCE_EXPECTATION, True, 0)


def test_a_record_dropped_as_late_or_kept_rows_not_in_bronze_fail_the_balance() -> None:
    assert not dedup_results(_progress(10, 0, late=2), 10, "raw_logs", NOW)[1].success
    off = dedup_results(_progress(10, 0), 9, "raw_logs", NOW)[1]
    assert (off.success, off.unexpected_count) == (False, 1)


def test_no_rows_without_deduplication_and_only_the_count_when_raw_is_unknown() -> None:
    assert dedup_results({"batchId": 1, "stateOperators": []}, 5, "raw_logs", NOW) == []
    assert [r.expectation for r in dedup_results(_progress(1, 1), None, "raw_logs", NOW)] == [DEDUP_EXPECTATION]


def test_zero_turns_it_off() -> None:
    assert horizon_off("0 seconds")
    assert not horizon_off("15 minutes")
