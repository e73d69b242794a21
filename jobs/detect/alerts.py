"""Candidates of one micro-batch -> alert lifecycle -> MERGE into `alerts`, exactly once per batch; incidents after.

A process has ONE writer of `alerts` and `incidents` (`AlertSink.shared`): every query hands it typed candidates
through its `AlertWriter` (the query's role and app id), and it alone reads the open alerts, merges them and
regroups the incidents (jobs.detect.incidents), under one lock, each commit under the handing query's app
transaction (a replayed batch merges nothing twice). Each alert type has one role (the detector registry,
:data:`pipelines.detection.registry.DETECTORS`, by :class:`DetectQuery`: the log or the metric family), which alone
opens, updates and resolves alerts of that type, by the event time of the input it reads. Writers in separate
processes (spark-submit jobs of each family) meet as concurrent Delta commits, and the one that loses re-reads the
open alerts and merges again.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.incidents import IncidentWriter
from lake.merge import DeltaMerger
from lake.read import LatestTable
from lake.tables import CommitFailedError
from pipelines.detection.lifecycle import Candidate, apply_lifecycle
from pipelines.detection.registry import owned_types
from schemas.alerts import AlertStatus, DetectQuery
from schemas.tables import ALERTS

if TYPE_CHECKING:
    from jobs.run.settings import Settings
    from pipelines.detection.config import DetectionConfig

__all__ = ["AlertSink", "AlertWriter"]

log = logging.getLogger(__name__)

# A merge that lost a commit race with another process's writer is retried this many times (each retry re-reads the
# open alerts; writers own disjoint alert types, so a retry always applies), after a pause of up to this long.
MAX_COMMIT_RETRIES = 5
RETRY_JITTER_S = 0.2


class AlertSink:
    """The one writer of `alerts` and `incidents` of a process (per lake): `shared(settings, cfg)`."""

    _shared: ClassVar[dict[tuple[str, str], AlertSink]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, settings: Settings, cfg: DetectionConfig) -> None:
        self.path = settings.table_path(ALERTS.name)
        self.cfg = cfg
        self.merger = DeltaMerger(self.path, ALERTS, "alerts", ["alert_id"])
        self.table = LatestTable(self.path, ALERTS.to_arrow())
        self.incidents = IncidentWriter(settings, cfg, self.table)
        # foreachBatch functions run on separate driver threads: their read-open-alerts / merge steps must not
        # interleave
        self.lock = threading.Lock()

    @classmethod
    def shared(cls, settings: Settings, cfg: DetectionConfig) -> AlertSink:
        """The process's sink of the lake `settings` names (made on first use; one per detection config, which a
        process's queries share)."""
        key = (os.path.abspath(settings.table_path(ALERTS.name)), repr(cfg))
        with cls._shared_lock:
            sink = cls._shared.get(key)
            if sink is None:
                sink = cls._shared[key] = cls(settings, cfg)
            return sink

    def open_alerts(self, types: frozenset[str], clusters: set[str] | None = None) -> list[dict[str, Any]]:
        """The open alerts of `types` (of `clusters` only, when given)."""
        if not self.table.exists():
            return []
        where = (pc.field("status") == AlertStatus.open.value) & pc.field("type").isin(sorted(types))
        rows = self.table.read(where=where).to_pylist()
        return [a for a in rows if clusters is None or a["cluster"] in clusters]

    def write(self, role: DetectQuery, app: str, candidates: list[Candidate],
              watermark: dt.datetime | Mapping[str, dt.datetime] | None, batch_id: int,
              clusters: set[str] | None = None) -> int:
        """Apply the lifecycle to the open alerts `role` owns (of `clusters` only, when given) and merge as batch
        `batch_id` of `app`; returns the number of alert rows written. `watermark`: the event time that resolves
        alerts, one for all clusters or one per cluster (a cluster without one resolves nothing)."""
        types = owned_types(role)
        for attempt in range(MAX_COMMIT_RETRIES + 1):
            with self.lock:  # a replayed batch is skipped by the merger's app transaction
                rows = self._lifecycle(self.open_alerts(types, clusters), candidates, watermark)
                try:
                    self.merger.write_arrow(pa.Table.from_pylist(rows, schema=ALERTS.to_arrow()), batch_id, app)
                except CommitFailedError as exc:
                    if attempt == MAX_COMMIT_RETRIES:
                        raise
                    log.warning("%s batch %d: alerts commit lost a race (%s); merging again", app, batch_id, exc)
                else:
                    self._incidents(rows, app, batch_id)
                    return len(rows)
            time.sleep(random.uniform(0, RETRY_JITTER_S))  # outside the lock: let the other writer finish
        raise AssertionError("unreachable")

    def _incidents(self, rows: list[dict[str, Any]], app: str, batch_id: int) -> None:
        """Regroup the incidents around the alert rows written; a failure is logged, never the batch's: the alerts
        are committed, and the next write of these brokers' alerts regroups them (their open incidents included)."""
        if not rows:
            return
        try:
            self.incidents.write(rows, app, batch_id)
        except Exception as exc:
            log.warning("%s batch %d: incidents not regrouped (%s: %s); the next alerts write of those brokers "
                        "does it", app, batch_id, type(exc).__name__, exc, exc_info=True)

    def _lifecycle(self, open_alerts: list[dict[str, Any]], cands: list[Candidate],
                   watermark: dt.datetime | Mapping[str, dt.datetime] | None) -> list[dict[str, Any]]:
        resolve_after = dt.timedelta(seconds=self.cfg.resolve_after_s)
        now = dt.datetime.now(dt.UTC)
        if watermark is None or isinstance(watermark, dt.datetime):
            return apply_lifecycle(open_alerts, cands, watermark, resolve_after, now)
        rows: list[dict[str, Any]] = []
        for cluster in sorted({a["cluster"] for a in open_alerts} | {c.cluster for c in cands}):
            rows += apply_lifecycle([a for a in open_alerts if a["cluster"] == cluster],
                                    [c for c in cands if c.cluster == cluster], watermark.get(cluster),
                                    resolve_after, now)
        return rows


class AlertWriter:
    """One query's hand into the process's AlertSink: its role (the alert types it owns) and its app id."""

    def __init__(self, settings: Settings, role: DetectQuery, app: str, cfg: DetectionConfig) -> None:
        self.sink = AlertSink.shared(settings, cfg)
        self.role = role
        self.app = app

    def open_alerts(self, clusters: set[str] | None = None) -> list[dict[str, Any]]:
        """The open alerts this query's role owns (of `clusters` only, when given)."""
        return self.sink.open_alerts(owned_types(self.role), clusters)

    def write(self, candidates: list[dict[str, Any]], watermark: dt.datetime | Mapping[str, dt.datetime] | None,
              batch_id: int, clusters: set[str] | None = None) -> int:
        """The batch's candidates (rows of pipelines.detection.lifecycle.Candidate) to the sink; see AlertSink.write."""
        return self.sink.write(self.role, self.app, [Candidate.from_row(c) for c in candidates], watermark, batch_id,
                               clusters)
