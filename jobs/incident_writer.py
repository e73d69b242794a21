"""Alerts -> incidents (pipelines.detection.incidents) -> MERGE into `incidents`, after each alerts MERGE.

The alert writer calls it under its lock with the clusters its batch touched, so in one process (`planewatch
pipeline`) incidents are written by the same path, in the same order, as the alerts they group. It regroups every
alert of those clusters (the `alerts` table holds one row per alert: a year of them is thousands, read in
milliseconds), keeps the id of each incident whose alerts a group holds, merges only the incidents whose content
changed, and deletes those the regrouping merged into another. No wall clock is involved: a backfill or a
catch-up, whose alerts are days behind, groups as live input does.

Separate processes writing alerts (spark-submit jobs) regroup from their own reads: one may write an incident
without the other's newest alert; the other's next write puts it right.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from jobs.io.delta_sink import DeltaMerger
from pipelines.detection.incidents import group_incidents
from schemas.lake_read import LatestTable
from schemas.tables import INCIDENTS

if TYPE_CHECKING:
    from jobs.io.settings import Settings
    from pipelines.detection.config import DetectionConfig

__all__ = ["IncidentWriter"]

log = logging.getLogger(__name__)

# Columns that say nothing new when only they differ.
_BOOKKEEPING = ("updated_at",)


def _same(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return old is not None and all(old.get(k) == v for k, v in new.items() if k not in _BOOKKEEPING)


class IncidentWriter:
    """Regroups the alerts of the clusters a batch touched and merges their incidents."""

    def __init__(self, settings: Settings, app: str, cfg: DetectionConfig, alerts: LatestTable) -> None:
        self.path = settings.table_path(INCIDENTS.name)
        self.merger = DeltaMerger(self.path, INCIDENTS, f"{app}+incidents", ["incident_id"])
        self.alerts = alerts
        self.resolve_after = dt.timedelta(seconds=cfg.resolve_after_s)
        self.incidents = LatestTable(self.path, INCIDENTS.to_arrow())

    @staticmethod
    def _of(table: LatestTable, clusters: set[str]) -> list[dict[str, Any]]:
        if not table.exists():
            return []
        rows: list[dict[str, Any]] = table.read(where=pc.field("cluster").isin(sorted(clusters))).to_pylist()
        return rows

    def write(self, clusters: set[str], batch_id: int, now: dt.datetime | None = None) -> int:
        """Regroup the incidents of `clusters`; returns how many incident rows were merged."""
        if not clusters:
            return 0
        before = {r["incident_id"]: r for r in self._of(self.incidents, clusters)}
        previous = {aid: iid for iid, r in before.items() for aid in (r["alert_ids"] or "").split(",") if aid}
        grouped = group_incidents(self._of(self.alerts, clusters), self.resolve_after, previous)
        now = now or dt.datetime.now(dt.UTC)
        changed = [{**i, "updated_at": now} for i in grouped if not _same(before.get(i["incident_id"]), i)]
        if changed:
            self.merger.write_arrow(pa.Table.from_pylist(changed, schema=INCIDENTS.to_arrow()), batch_id)
        gone = sorted(set(before) - {i["incident_id"] for i in grouped})
        if gone:  # merged into another incident by an alert that bridged them, or arrived late
            ids = ", ".join(f"'{i}'" for i in gone)  # hex digests of our own
            self.merger.latest_table().delete(f"incident_id IN ({ids})")
            log.info("incidents: %d merged into others (%s)", len(gone), ", ".join(gone))
        return len(changed)
