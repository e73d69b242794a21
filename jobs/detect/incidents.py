"""Alerts -> incidents (pipelines.detection.incidents) -> MERGE into `incidents`, after each alerts MERGE.

The alert writer calls it under its lock with the alert rows its batch wrote, so in one process (`planewatch
pipeline`) incidents are written by the same path, in the same order, as the alerts they group. Per broker written,
it regroups the alerts whose spans chain to the written ones and the incidents they belong to, plus the broker's
open incidents (one whose resolving write failed is put right by the broker's next write): nothing else can change
(regrouping a year of alerts at every write took 1.4 s for 50,000 of them). It keeps the id of each incident whose
alerts a group holds, merges only the incidents whose content changed, and deletes those the regrouping merged
into another. No wall clock is involved: a backfill or a catch-up, whose alerts are days behind, groups as live
input does.

Separate processes writing alerts (spark-submit jobs) regroup from their own reads: one may write an incident
without the other's newest alert; the next write of that broker's alerts puts it right.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lake.merge import DeltaMerger
from lake.read import LatestTable
from pipelines.detection.incidents import History, group_incidents, live_end
from schemas.alerts import AlertStatus
from schemas.tables import INCIDENTS

if TYPE_CHECKING:
    from jobs.run.settings import Settings
    from pipelines.detection.config import DetectionConfig

__all__ = ["IncidentWriter"]

log = logging.getLogger(__name__)

# What an incident's baseline reads of the earlier incidents.
HISTORY_COLUMNS = ("incident_id", "cluster", "broker_id", "cause", "started_at")
# Columns that say nothing new when only they differ.
_BOOKKEEPING = ("updated_at",)


def _same(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return old is not None and all(old.get(k) == v for k, v in new.items() if k not in _BOOKKEEPING)


class IncidentWriter:
    """Regroups the alerts around those a batch wrote and merges their incidents."""

    def __init__(self, settings: Settings, cfg: DetectionConfig, alerts: LatestTable) -> None:
        self.path = settings.table_path(INCIDENTS.name)
        self.merger = DeltaMerger(self.path, INCIDENTS, "incidents", ["incident_id"])
        self.alerts = alerts
        self.resolve_after = dt.timedelta(seconds=cfg.resolve_after_s)
        self.history_window = dt.timedelta(seconds=cfg.incident_history_s)
        self.incidents = LatestTable(self.path, INCIDENTS.to_arrow())

    def _end(self, r: dict[str, Any]) -> dt.datetime:
        return live_end(r, self.resolve_after)

    def _keys_where(self, keys: list[tuple[str, int | None]]) -> pc.Expression:
        brokers = sorted({b for _, b in keys if b is not None})
        by_broker = pc.field("broker_id").isin(brokers)
        if any(b is None for _, b in keys):
            by_broker = by_broker | pc.field("broker_id").is_null()
        return pc.field("cluster").isin(sorted({c for c, _ in keys})) & by_broker

    def _near(self, keys: list[tuple[str, int | None]], lo: dt.datetime, hi: dt.datetime
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The alerts and incidents of `keys` live in [lo, hi], and the keys' open incidents (filtered in the scan:
        a year of alerts is never turned into rows)."""
        ts = pa.timestamp("us", "UTC")
        first, last = pa.scalar(lo, ts), pa.scalar(hi, ts)
        opened = pc.field("status") == AlertStatus.open.value
        alerts: list[dict[str, Any]] = []
        if self.alerts.exists():
            seen_since = pa.scalar(lo - self.resolve_after, ts)
            live = opened | (pc.field("resolved_at") >= first) | (
                pc.field("resolved_at").is_null() & (pc.field("last_seen_at") >= seen_since))
            where = self._keys_where(keys) & (pc.field("started_at") <= last) & live
            alerts = self.alerts.read(where=where).to_pylist()
        incidents: list[dict[str, Any]] = []
        if self.incidents.exists():
            live = opened | ((pc.field("started_at") <= last) & (pc.field("resolved_at") >= first))
            incidents = self.incidents.read(where=self._keys_where(keys) & live).to_pylist()
        return alerts, incidents

    def _history(self, clusters: list[str], lo: dt.datetime, hi: dt.datetime) -> History:
        """The incidents of `clusters` that started in the history window before [lo, hi] (their baselines count
        them)."""
        if not self.incidents.exists():
            return History(window=self.history_window)
        ts = pa.timestamp("us", "UTC")
        since = pa.scalar(lo - self.history_window, ts)
        where = (pc.field("cluster").isin(clusters) & (pc.field("started_at") >= since)
                 & (pc.field("started_at") <= pa.scalar(hi, ts)))
        rows = self.incidents.read(where=where).select(list(HISTORY_COLUMNS)).to_pylist()
        return History(rows, self.history_window)

    def _component(self, key: tuple[str, int | None], seeds: list[dict[str, Any]],
                   alerts: list[dict[str, Any]], incidents: list[dict[str, Any]]
                   ) -> tuple[dt.datetime, dt.datetime, list[dict[str, Any]], dict[str, dict[str, Any]]]:
        """The span of the alerts of `key` that chain to `seeds` (the written alerts and the key's open incidents),
        directly or through other alerts and incidents; those alerts, and the incidents they belong to: the only
        ones the written alerts can change (an open incident whose resolving write failed is put right here)."""
        mine = [a for a in alerts if (a["cluster"], a["broker_id"]) == key and a.get("started_at") is not None]
        theirs = [i for i in incidents if (i["cluster"], i["broker_id"]) == key]
        seeds = [*seeds, *(i for i in theirs if i["status"] == AlertStatus.open.value)]
        lo, hi = min(r["started_at"] for r in seeds), max(self._end(r) for r in seeds)
        while True:  # widen to everything that overlaps, until nothing more does
            spans = [(r["started_at"], self._end(r)) for r in (*mine, *theirs)
                     if r["started_at"] <= hi and self._end(r) >= lo]
            new_lo, new_hi = min([lo, *(s for s, _ in spans)]), max([hi, *(e for _, e in spans)])
            if (new_lo, new_hi) == (lo, hi):
                break
            lo, hi = new_lo, new_hi
        inside = [a for a in mine if a["started_at"] <= hi and self._end(a) >= lo]
        before = {i["incident_id"]: i for i in theirs if i["started_at"] <= hi and self._end(i) >= lo}
        return lo, hi, inside, before

    def write(self, written: list[dict[str, Any]], app: str, batch_id: int, now: dt.datetime | None = None) -> int:
        """Regroup the incidents around the alert rows `written` by batch `batch_id` of `app` (per broker, over the
        alerts and incidents whose spans chain to them); returns how many incident rows were merged."""
        rows = [r for r in written if r.get("started_at") is not None]
        if not rows:
            return 0
        keys = sorted({(r["cluster"], r["broker_id"]) for r in rows}, key=lambda k: (k[0], k[1] is None, k[1]))
        lo, hi = min(r["started_at"] for r in rows), max(self._end(r) for r in rows)
        while True:  # read what is live around the written alerts; read again while a chain reaches past it
            alerts, incidents = self._near(keys, lo, hi)
            parts = {k: self._component(k, [r for r in rows if (r["cluster"], r["broker_id"]) == k], alerts, incidents)
                     for k in keys}
            new_lo, new_hi = min(p[0] for p in parts.values()), max(p[1] for p in parts.values())
            if new_lo >= lo and new_hi <= hi:
                break
            lo, hi = min(lo, new_lo), max(hi, new_hi)
        grouped: list[dict[str, Any]] = []
        before: dict[str, dict[str, Any]] = {}
        history = self._history(sorted({k[0] for k in keys}), lo, hi)
        for _lo, _hi, inside, theirs in parts.values():
            previous = {aid: iid for iid, r in theirs.items() for aid in (r["alert_ids"] or "").split(",") if aid}
            grouped += group_incidents(inside, self.resolve_after, previous, history)
            before |= theirs
        now = now or dt.datetime.now(dt.UTC)
        changed = [{**i, "updated_at": now} for i in grouped if not _same(before.get(i["incident_id"]), i)]
        if changed:
            self.merger.write_arrow(pa.Table.from_pylist(changed, schema=INCIDENTS.to_arrow()), batch_id,
                                    f"{app}+incidents")
        gone = sorted(set(before) - {i["incident_id"] for i in grouped})
        if gone:  # merged into another incident by an alert that bridged them, or arrived late
            ids = ", ".join(f"'{i}'" for i in gone)  # hex digests of our own
            self.merger.delete(f"incident_id IN ({ids})")
            log.info("incidents: %d merged into others (%s)", len(gone), ", ".join(gone))
        return len(changed)
