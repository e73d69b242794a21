"""A row of `dq_results` (schemas.tables.DQ_RESULTS) as a value, and the names of the suites written there.

Each micro-batch of an ingest query writes, for the batch (`batch_id`) and a table (`table_name`):

* suite `<table>:rows` (:func:`rows_suite`): one row per hard rule of a silver table's suite, judged on every row
  of the batch (`unexpected_count` rows failed it and went to `quarantine`, of `element_count` rows parsed for the
  table);
* the suite's own name (the silver table's name): Great Expectations on a bounded sample, one row per expectation,
  or one row `great_expectations error: ...` (:data:`GE_ERROR_PREFIX`) when it could not run;
* suite `reconciliation` (:data:`RECONCILIATION_SUITE`): `raw == silver + quarantine + unused` over the bronze
  table's records, and for a file query `file bytes: read + waiting == seen`;
* suite `duplicates` (:data:`DEDUP_SUITE`), a Kafka log query with a shipper's envelope only, written by the next
  batch from the batch's progress (jobs.sources.dedup): the records dropped as delivered twice
  (:data:`DEDUP_EXPECTATION`) and `records read == raw + duplicates` (:data:`DEDUP_BALANCE_EXPECTATION`);
* suite `source_files` (:data:`SKIPPED_SUITE`), a file query only: each input entry skipped as not a regular file
  (`skipped <path>: <reason>`, once) and their count (`regular files only`) whenever it changes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "BYTES_EXPECTATION",
    "DEDUP_BALANCE_EXPECTATION",
    "DEDUP_EXPECTATION",
    "DEDUP_SUITE",
    "GE_ERROR_CHARS",
    "GE_ERROR_PREFIX",
    "RECONCILIATION_SUITE",
    "RECORDS_EXPECTATION",
    "SKIPPED_EXPECTATION",
    "SKIPPED_SUITE",
    "SOURCE_REASON_CHARS",
    "SOURCE_SUITE",
    "DqResult",
    "rows_suite",
]

RECONCILIATION_SUITE = "reconciliation"
RECORDS_EXPECTATION = "raw == silver + quarantine + unused"
BYTES_EXPECTATION = "file bytes: read + waiting == seen"
DEDUP_SUITE = "duplicates"
DEDUP_EXPECTATION = "a record delivered again within the horizon is stored once"
DEDUP_BALANCE_EXPECTATION = "records read == raw + duplicates"
SKIPPED_SUITE = "source_files"
SKIPPED_EXPECTATION = "regular files only"
# A batch's records standing for a failed read of their source (a scrape, a Prometheus read, an unmapped target, a
# shipper's record that cannot be opened): one row per kind of failure, its expectation the kind: the quarantine
# reason up to its first ': ' (`prometheus read failed`, `scrape failed`, `prometheus target not mapped`).
SOURCE_SUITE = "source"
# ... at most this many characters of it (a reason's head names the failure; its tail, the target, varies).
SOURCE_REASON_CHARS = 120
GE_ERROR_PREFIX = "great_expectations error: "
# An error row's expectation holds at most this many characters (an exception's text can carry a whole frame).
GE_ERROR_CHARS = 500


def rows_suite(table: str) -> str:
    """The suite name of a silver table's hard rules judged on every row."""
    return f"{table}:rows"


@dataclass(frozen=True, slots=True)
class DqResult:
    """One check of one batch of one table: a `dq_results` row.

    `unexpected_count` is what failed the check (rows, bytes or input entries) and `element_count` what it examined;
    both are None when the check could not run. `duration_ms` is the check's own time when it ran apart (Great
    Expectations), else None.
    """

    table_name: str
    batch_id: int
    suite: str
    expectation: str
    success: bool
    unexpected_count: int | None
    element_count: int | None
    run_ts: dt.datetime
    duration_ms: float | None = None

    def to_row(self) -> dict[str, Any]:
        """The row in DQ_RESULTS's columns (a test pins that they are the same names, in the same order)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
