"""`RecentLines`: the state-change lines the latency rules read around a slow or still-open control request
(fetcher bursts, lock waits, controller elections: `LATENCY_RULE_EVENTS`), kept per cluster between a log query's
batches.

Read from `state_change_events` for every batch with such a request, the stretch cost what opening the cluster's
files of the day cost (in the fleet benchmark on the object-store lake, 0.9-1.3 s for 4-5 thousand lines every third
steady batch). Here a cluster's lines are read from the lake once, when a rule first needs them, and then follow
the rows each batch hands over (:meth:`observe`; for a batch the executors processed, the lines of these kinds read
from its committed files): a batch costs what it parsed. The lines of the last `keep` (the never-completed timeout
and KEEP_SLACK before the cluster's newest line) are kept; a span reaching further back reads the lake, as does a
cluster over MAX_LINES_PER_CLUSTER lines. A batch replayed in the same process (:meth:`begin` with a batch id not
after the last) forgets every cluster (read from the lake again when needed), so that no line is counted twice.

Only the rows of the query that keeps them are followed: a cluster whose logs two log queries read (two sources of
one cluster, which a deployment does not do) sees the other's lines from its first read only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.cluster_window import ClusterWindow, Span
from lake.read import LatestTable
from pipelines.detection.latency_detectors import LATENCY_RULE_COLUMNS, LATENCY_RULE_EVENTS

__all__ = ["KEEP_SLACK", "MAX_LINES_PER_CLUSTER", "RecentLines"]

# Kept beyond the never-completed timeout: a request still open that long is reported by then, and a span starts at
# the earliest changed request's start (a few seconds back for one that completed in the batch).
KEEP_SLACK = dt.timedelta(minutes=3)
# A cluster's lines are kept in memory up to this many (~30 MB of these columns); beyond, its spans read the lake
# each time. A 500-broker cluster's fetchers log a few hundred such lines a second in a burst.
MAX_LINES_PER_CLUSTER = 400_000
_KINDS = pa.array([e.value for e in LATENCY_RULE_EVENTS], pa.string())


class RecentLines(ClusterWindow[pa.Table]):
    """The recent state-change lines of the clusters the latency rules asked for (module docstring)."""

    what = "recent state-change lines"

    def __init__(self, reader: LatestTable, keep: dt.timedelta) -> None:
        super().__init__()
        self.reader = reader
        self.keep = keep
        self.schema = pa.schema([reader.schema.field(c) for c in LATENCY_RULE_COLUMNS])
        self._batch: int | None = None  # the last batch begun

    def begin(self, batch_id: int) -> None:
        """A batch starts: a replay of one already begun forgets every cluster kept."""
        if self._batch is not None and batch_id <= self._batch:
            self.forget(list(self._rows))
        self._batch = batch_id

    def _wanted(self, lines: pa.Table) -> pa.Table:
        return lines.filter(pc.fill_null(pc.is_in(lines["event"], _KINDS), False))

    def _read(self, spans: Sequence[Span]) -> pa.Table:
        return self._wanted(self.reader.read_spans(spans).select(self.schema.names))

    def observe(self, lines: pa.Table) -> None:
        """Follow the state-change rows a batch parsed (those of the clusters kept here)."""
        if not self._rows or lines.num_rows == 0:
            return
        mine = self._wanted(lines.filter(pc.is_in(lines["cluster"], pa.array(list(self._rows), pa.string()))))
        if mine.num_rows == 0:
            return
        mine = mine.select(self.schema.names).cast(self.schema)
        for cluster in pc.unique(mine["cluster"]).to_pylist():
            new = mine.filter(pc.equal(mine["cluster"], cluster))
            self._keep(cluster, pa.concat_tables([self._rows[cluster], new]))

    def _keep(self, cluster: str, rows: pa.Table) -> None:
        newest = pc.max(rows["ts"]).as_py() if rows.num_rows else None
        if isinstance(newest, dt.datetime):
            cut = newest - self.keep
            if cut > self._from[cluster]:
                ts_type = rows.schema.field("ts").type
                rows = rows.filter(pc.fill_null(pc.greater_equal(rows["ts"], pa.scalar(cut, ts_type)), False))
                self._from[cluster] = cut
        self._kept(cluster, rows.combine_chunks(), rows.num_rows, MAX_LINES_PER_CLUSTER, self.keep)

    def _slice(self, rows: pa.Table, lo: dt.datetime, hi: dt.datetime) -> pa.Table:
        ts_type = rows.schema.field("ts").type
        inside = pc.and_(pc.greater_equal(rows["ts"], pa.scalar(lo, ts_type)),
                         pc.less_equal(rows["ts"], pa.scalar(hi, ts_type)))
        return rows.filter(pc.fill_null(inside, False))

    def read_spans(self, spans: Sequence[Span]) -> pa.Table:
        """The lines of `LATENCY_RULE_EVENTS` in each span (`(cluster, lo, hi)`, closed), their
        `LATENCY_RULE_COLUMNS`, as `LatestTable.read_spans` of state_change_events would give them."""
        out = self._spans(spans)
        return pa.concat_tables(out) if out else self.schema.empty_table()
