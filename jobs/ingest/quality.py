"""The data-quality bookkeeping of one ingest query: its suites, and the dq_results rows (schemas.dq) its checks make.

* Hard rules (suite `<table>:rows`): the engine judges every silver row of a batch and counts the rows failing each
  rule (those rows go to `quarantine`); :meth:`IngestQuality.rule_results` makes one row per hard rule of the count.
* Great Expectations (the suite's own name): on a bounded sample of a table's rows of the batch, at most once per
  `quality.ge_interval_s` per table (:meth:`IngestQuality.ge_due`; the sample costs a read and ~2 s of driver CPU).
  Trouble in GE, or in reading its sample, is one error row, never a failed batch.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipelines.quality import load_suite
from pipelines.quality.gx import prepare_in_background, validate_sample
from schemas.dq import GE_ERROR_CHARS, GE_ERROR_PREFIX, DqResult, rows_suite

if TYPE_CHECKING:
    from jobs.run.settings import QualitySettings
    from pipelines.quality.rules import Suite

__all__ = ["IngestQuality"]

log = logging.getLogger(__name__)


class IngestQuality:
    """The quality checks of one ingest query over its silver tables."""

    def __init__(self, settings: QualitySettings, tables: Sequence[str]) -> None:
        self.settings = settings
        self.tables = tuple(tables)  # the query's silver tables, in the order their rows are reported
        self._ge_last: dict[str, float] = {}  # table -> monotonic time of its last GE sample validation

    def suites(self) -> dict[str, Suite]:
        """The suite of each silver table that has one, read from its file now (empty with quality off)."""
        if not self.settings.enabled:
            return {}
        out: dict[str, Suite] = {}
        for table in self.tables:
            try:
                out[table] = load_suite(table)
            except Exception as exc:
                log.warning("no quality suite for %s: %s", table, exc)
        return out

    def prepare(self) -> None:
        """Build the Great Expectations context in the background while the first batch runs (~3 s)."""
        if self.settings.enabled:
            prepare_in_background(list(self.suites().values()))

    @staticmethod
    def rule_results(table: str, suite: Suite, failed: Mapping[str, int], n_good: int, batch_id: int
                     ) -> list[DqResult]:
        """One row per hard rule of `suite`: `failed` rows (expectation -> rows) of the `n_good` + failed rows parsed
        for `table` in the batch."""
        total = n_good + sum(failed.values())
        now = dt.datetime.now(dt.UTC)
        return [DqResult(table, batch_id, rows_suite(table), e.name, failed.get(e.name, 0) == 0,
                         failed.get(e.name, 0), total, now, duration_ms=0.0)
                for e in suite.hard]

    def ge_due(self, table: str) -> bool:
        """Whether this table's GE sample runs in this batch (at most once per quality.ge_interval_s); True counts
        as the run."""
        now = time.monotonic()
        last = self._ge_last.get(table)
        if last is not None and now - last < self.settings.ge_interval_s:
            return False
        self._ge_last[table] = now
        return True

    def sample_results(self, table: str, suite: Suite, sample: Callable[[int], Any], batch_id: int
                       ) -> list[DqResult]:
        """Great Expectations on `sample(quality.sample_limit)` (a pandas frame of at most that many of the table's
        rows of the batch): one row per expectation, or one error row."""
        try:
            return validate_sample(sample(self.settings.sample_limit), suite, table, batch_id)
        except Exception as exc:  # GE trouble must not stop ingestion; it shows in the results table
            log.exception("Great Expectations failed on %s batch %d", table, batch_id)
            return [DqResult(table, batch_id, table, f"{GE_ERROR_PREFIX}{exc}"[:GE_ERROR_CHARS], False, None, None,
                             dt.datetime.now(dt.UTC))]
