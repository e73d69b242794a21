"""Alerts -> incidents (pipelines.detection.incidents) -> MERGE into `incidents`, after each alerts MERGE.

The alert writer calls it under its lock with the clusters its batch touched, so incidents are written by the same
path, in the same order, as the alerts they group. It regroups those clusters' alerts live within INCIDENT_HORIZON
(open, or last seen within it) and merges the incidents on `incident_id`, exactly once per batch id of its app
(`<alerts app>+incidents`). An incident that regrouping no longer yields (an earlier alert arrived late and gave its
group another first alert) is deleted, so an alert belongs to one incident.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from jobs.io.delta_sink import DeltaMerger
from pipelines.detection.incidents import group_incidents
from schemas.alerts import AlertStatus
from schemas.lake_read import LatestTable
from schemas.tables import INCIDENTS

if TYPE_CHECKING:
    from jobs.io.settings import Settings
    from pipelines.detection.config import DetectionConfig

__all__ = ["INCIDENT_HORIZON", "IncidentWriter"]

log = logging.getLogger(__name__)

# Alerts live within this long are regrouped at each write; an incident whose alerts all went quiet before it is
# final. A day covers any incident an operator still works on, and bounds what a write reads.
INCIDENT_HORIZON = dt.timedelta(hours=24)


class IncidentWriter:
    """Regroups the recent alerts of the clusters a batch touched and merges their incidents."""

    def __init__(self, settings: Settings, app: str, cfg: DetectionConfig, alerts: LatestTable) -> None:
        self.path = settings.table_path(INCIDENTS.name)
        self.merger = DeltaMerger(self.path, INCIDENTS, f"{app}+incidents", ["incident_id"])
        self.alerts = alerts
        self.resolve_after = dt.timedelta(seconds=cfg.resolve_after_s)
        self.incidents = LatestTable(self.path, INCIDENTS.to_arrow())

    def _recent(self, table: LatestTable, clusters: set[str], since: dt.datetime) -> pa.Table:
        where = pc.field("cluster").isin(sorted(clusters)) & (
            (pc.field("status") == AlertStatus.open.value)
            | (pc.field("last_seen_at") >= pa.scalar(since, pa.timestamp("us", "UTC"))))
        return table.read(where=where) if table.exists() else pa.table({})

    def write(self, clusters: set[str], batch_id: int, now: dt.datetime | None = None) -> int:
        """Regroup and merge the incidents of `clusters`; returns how many incident rows were written."""
        if not clusters:
            return 0
        now = now or dt.datetime.now(dt.UTC)
        since = now - INCIDENT_HORIZON
        rows = [{**i, "updated_at": now}
                for i in group_incidents(self._recent(self.alerts, clusters, since).to_pylist(), self.resolve_after)]
        if rows:
            self.merger.write_arrow(pa.Table.from_pylist(rows, schema=INCIDENTS.to_arrow()), batch_id)
        before = self._recent(self.incidents, clusters, since)
        gone = sorted(set(before.column("incident_id").to_pylist()) - {r["incident_id"] for r in rows}) \
            if before.num_rows else []
        if gone:
            ids = ", ".join(f"'{i}'" for i in gone)  # hex digests: nothing to escape
            DeltaTable(self.path).delete(f"incident_id IN ({ids})")
            log.info("incidents: %d regrouped away (%s)", len(gone), ", ".join(gone))
        return len(rows)
