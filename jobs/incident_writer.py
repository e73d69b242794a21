"""Alerts -> incidents (pipelines.detection.incidents) -> MERGE into `incidents`, after each alerts MERGE.

The alert writer calls it under its lock with the alert rows its batch wrote, so in one process (`planewatch
pipeline`) incidents are written by the same path, in the same order, as the alerts they group. It regroups the
alerts of those rows' brokers over the time they and the incidents they overlap span (an incident elsewhere or
earlier cannot change: regrouping a year of alerts at every write took 1.4 s for 50,000 of them), keeps the id of
each incident whose alerts a group holds, merges only the incidents whose content changed, and deletes those the
regrouping merged into another. No wall clock is involved: a backfill or a catch-up, whose alerts are days behind,
groups as live input does.

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
    """Regroups the alerts around those a batch wrote and merges their incidents."""

    def __init__(self, settings: Settings, app: str, cfg: DetectionConfig, alerts: LatestTable) -> None:
        self.path = settings.table_path(INCIDENTS.name)
        self.merger = DeltaMerger(self.path, INCIDENTS, f"{app}+incidents", ["incident_id"])
        self.alerts = alerts
        self.resolve_after = dt.timedelta(seconds=cfg.resolve_after_s)
        self.incidents = LatestTable(self.path, INCIDENTS.to_arrow())

    def _end(self, r: dict[str, Any]) -> dt.datetime:
        """An alert's or an incident's live end: resolved_at, else last seen plus the hysteresis."""
        end: dt.datetime = r.get("resolved_at") or (r.get("last_seen_at") or r["started_at"]) + self.resolve_after
        return end

    def write(self, written: list[dict[str, Any]], batch_id: int, now: dt.datetime | None = None) -> int:
        """Regroup the incidents around the alert rows `written` (their brokers, over the time their incidents
        span); returns how many incident rows were merged."""
        rows = [r for r in written if r.get("started_at") is not None]
        if not rows:
            return 0
        keys = {(r["cluster"], r["broker_id"]) for r in rows}
        clusters = sorted({c for c, _ in keys})
        lo, hi = min(r["started_at"] for r in rows), max(self._end(r) for r in rows)
        before: dict[str, dict[str, Any]] = {}
        if self.incidents.exists():
            for inc in self.incidents.read(where=pc.field("cluster").isin(clusters)).to_pylist():
                if (inc["cluster"], inc["broker_id"]) in keys and inc["started_at"] <= hi and self._end(inc) >= lo:
                    before[inc["incident_id"]] = inc
        if before:  # the incidents the written alerts may join or bridge: regroup their whole span
            lo = min(lo, *(i["started_at"] for i in before.values()))
            hi = max(hi, *(self._end(i) for i in before.values()))
        since = pa.scalar(lo - self.resolve_after, pa.timestamp("us", "UTC"))
        where = (pc.field("cluster").isin(clusters) & (pc.field("last_seen_at") >= since)
                 & (pc.field("started_at") <= pa.scalar(hi, pa.timestamp("us", "UTC"))))
        alerts = [a for a in self.alerts.read(where=where).to_pylist() if (a["cluster"], a["broker_id"]) in keys]
        previous = {aid: iid for iid, r in before.items() for aid in (r["alert_ids"] or "").split(",") if aid}
        grouped = group_incidents(alerts, self.resolve_after, previous)
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
