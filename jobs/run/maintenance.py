"""The pipeline's lake maintenance: a daemon thread that runs `lake.maintenance.maintain_table` over every table of
the lake each `maintenance.interval_s`, beside the streaming queries (what a pass does, and why, is in
lake/maintenance.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping

from jobs.run import observability
from jobs.run.settings import Settings
from lake.maintenance import FAILURES_BEFORE_ERROR, TableReport, maintain_table
from lake.read import is_table
from schemas.tables import TABLES

__all__ = ["Maintainer"]

log = logging.getLogger(__name__)


class Maintainer:
    """The pipeline's maintenance: a daemon thread that runs a pass over every table of the lake each
    `interval_s` (the first after one interval) until `stop()`. A pass never raises: a table that failed is logged
    and tried again at the next pass."""

    def __init__(self, settings: Settings, clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.settings = settings
        self.cfg = settings.maintenance
        self.clock = clock
        self.passes = 0
        self.failures: Counter[str] = Counter()
        self.last: dict[str, TableReport] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lake-maintenance", daemon=True)

    def start(self) -> Maintainer:
        self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop after the table being maintained (a delta-rs operation is not interrupted)."""
        self._stop.set()
        self._thread.join(timeout_s)

    def run_pass(self) -> Mapping[str, TableReport]:
        """One pass over every table that exists in the lake."""
        reports: dict[str, TableReport] = {}
        for table in TABLES.values():
            if self._stop.is_set():
                break
            path = self.settings.table_path(table.name)
            if not is_table(path):
                continue
            try:
                report = maintain_table(path, table, self.cfg, self.clock())
                self.failures[table.name] = 0
            except Exception as exc:  # the next pass tries again; the queries go on
                self.failures[table.name] += 1
                level = logging.ERROR if self.failures[table.name] >= FAILURES_BEFORE_ERROR else logging.WARNING
                log.log(level, "maintenance of %s failed (%d in a row): %s", table.name, self.failures[table.name],
                        exc, exc_info=level == logging.ERROR)
                report = TableReport(table.name, errors=[f"{type(exc).__name__}: {exc}"])
            reports[table.name] = report
            if report.compacted_partitions or report.deleted_rows or report.vacuumed_files:
                log.info("maintenance of %s: %s", table.name, report)
        self.passes += 1
        self.last = reports
        observability.maintenance_done(reports)
        return reports

    def _run(self) -> None:
        while not self._stop.wait(self.cfg.interval_s):
            self.run_pass()
