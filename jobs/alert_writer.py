"""Candidates of one micro-batch -> alert lifecycle -> MERGE into the shared `alerts` table, exactly once per batch.

Three writers share `alerts`: the ingest job's log batches and metric batches (jobs.batch_detect) and the detect
job's pairing query. Each alert type has one writer (:data:`schemas.alerts.OWNERS`, by :class:`DetectQuery`),
which alone opens, updates and resolves alerts of that type, by the event time of the input it reads. In one
process a lock serialises their read-open-alerts / merge steps; writers in separate processes (spark-submit jobs)
meet as concurrent Delta commits, and the one that loses re-reads the open alerts and merges again. After a merge
that wrote alert rows, the same writer regroups those clusters' incidents (jobs.incident_writer), under the lock.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from jobs.incident_writer import IncidentWriter
from lake.merge import DeltaMerger
from lake.read import LatestTable
from lake.tables import CommitFailedError
from pipelines.detection.lifecycle import Candidate, apply_lifecycle
from schemas.alerts import AlertStatus, DetectQuery, owned_types
from schemas.tables import ALERTS

if TYPE_CHECKING:
    from jobs.io.settings import Settings
    from pipelines.detection.config import DetectionConfig

__all__ = ["AlertWriter"]

log = logging.getLogger(__name__)

# One lock per process: foreachBatch functions run on separate driver threads and must not interleave their
# read-open-alerts / merge steps on the shared `alerts` table.
_ALERTS_LOCK = threading.Lock()
# A merge that lost a commit race with another process's writer is retried this many times (each retry re-reads the
# open alerts; writers own disjoint alert types, so a retry always applies), after a pause of up to this long.
MAX_COMMIT_RETRIES = 5
RETRY_JITTER_S = 0.2


class AlertWriter:
    """Candidates of one micro-batch -> lifecycle -> MERGE into `alerts` (exactly once per batch id of `app`)."""

    def __init__(self, settings: Settings, role: DetectQuery, app: str, cfg: DetectionConfig) -> None:
        self.path = settings.table_path(ALERTS.name)
        self.cfg = cfg
        self.types = owned_types(role)
        self.merger = DeltaMerger(self.path, ALERTS, app, ["alert_id"])
        self.table = LatestTable(self.path, ALERTS.to_arrow())
        self.incidents = IncidentWriter(settings, app, cfg, self.table)

    def open_alerts(self, clusters: set[str] | None = None) -> list[dict[str, Any]]:
        """The open alerts this writer owns (of `clusters` only, when given)."""

        if not self.table.exists():
            return []
        where = (pc.field("status") == AlertStatus.open.value) & pc.field("type").isin(sorted(self.types))
        rows = self.table.read(where=where).to_pylist()
        return [a for a in rows if clusters is None or a["cluster"] in clusters]

    def write(self, candidates: list[dict[str, Any]], watermark: dt.datetime | Mapping[str, dt.datetime] | None,
              batch_id: int, clusters: set[str] | None = None) -> int:
        """Apply the lifecycle to the open alerts this writer owns (of `clusters` only, when given) and merge;
        returns the number of alert rows written. `watermark`: the event time that resolves alerts, one for all
        clusters or one per cluster (a cluster without one resolves nothing)."""

        cands = [Candidate.from_row(c) for c in candidates]
        for attempt in range(MAX_COMMIT_RETRIES + 1):
            with _ALERTS_LOCK:  # a replayed batch is skipped by the merger's app transaction
                rows = self._lifecycle(self.open_alerts(clusters), cands, watermark)
                try:
                    self.merger.write_arrow(pa.Table.from_pylist(rows, schema=ALERTS.to_arrow()), batch_id)
                except CommitFailedError as exc:
                    if attempt == MAX_COMMIT_RETRIES:
                        raise
                    log.warning("%s batch %d: alerts commit lost a race (%s); merging again", self.merger.app_id,
                                batch_id, exc)
                else:
                    self._incidents(rows, batch_id)
                    return len(rows)
            time.sleep(random.uniform(0, RETRY_JITTER_S))  # outside the lock: let the other writer finish
        raise AssertionError("unreachable")

    def _incidents(self, rows: list[dict[str, Any]], batch_id: int) -> None:
        """Regroup the incidents around the alert rows written; a failure is logged, never the batch's: the alerts
        are committed, and the next write of these brokers' alerts regroups them (their open incidents included)."""
        if not rows:
            return
        try:
            self.incidents.write(rows, batch_id)
        except Exception as exc:
            log.warning("%s batch %d: incidents not regrouped (%s: %s); the next alerts write of those brokers "
                        "does it", self.merger.app_id, batch_id, type(exc).__name__, exc, exc_info=True)

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
