"""`LatencyHistory`: the completed control requests of the baseline window, kept per cluster between a log query's
batches, which a slow request's baseline reads (pipelines.detection.baselines.add_baselines).

Read from `control_request_latency` for every batch with a slow request, the window (`detection.baseline_window_s`,
an hour) cost more the longer the pipeline ran: the day's compacted file of the cluster and the small files of its
last minutes are read whole to keep an hour of them (in the fleet benchmark, 0.01 s at the start, 0.2-0.95 s after
20 minutes, and growing through the day). Here a cluster's window is read from the lake once, when a baseline first
needs it, and then follows the rows each batch writes (:meth:`observe`): a batch costs what it wrote.

Only the rows of the query that keeps the history are followed: a cluster whose logs two log queries read (two
sources of one cluster, which a deployment does not do) sees the other's requests from its first read only. A
cluster whose window holds more than MAX_ROWS_PER_CLUSTER requests is read from the lake each time instead.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.cluster_window import ClusterWindow, Span
from lake.read import LatestTable
from pipelines.detection.baselines import history_spans
from pipelines.detection.candidates import frame as polars_frame
from schemas.events import LatencyStatus

__all__ = ["HISTORY_COLUMNS", "MAX_ROWS_PER_CLUSTER", "LatencyHistory"]

# What a baseline reads of a request (pipelines.detection.baselines).
HISTORY_COLUMNS = ["cluster", "broker_id", "request", "sent_ts", "end_to_end_ms", "controller_queue_ms",
                   "request_key", "status"]
# A cluster's window is kept in memory up to this many completed requests (~60 MB of these columns); beyond, its
# baselines read the lake each time. A fleet's 500-broker cluster sends ~60,000 control requests an hour.
MAX_ROWS_PER_CLUSTER = 1_000_000
# Rows older than the newest request less the window less this are dropped: a candidate that much older than the
# newest request (a late line) is rare, and its baseline reads the lake.
TRIM_SLACK = dt.timedelta(minutes=10)


def _completed(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.filter((pl.col("status") == LatencyStatus.COMPLETED.value) & pl.col("end_to_end_ms").is_not_null()
                       & pl.col("sent_ts").is_not_null())


class LatencyHistory(ClusterWindow[pl.DataFrame]):
    """The baseline window of the clusters whose baselines were asked for (module docstring)."""

    what = "baseline history"

    def __init__(self, reader: LatestTable, window: dt.timedelta) -> None:
        super().__init__()
        self.reader = reader
        self.window = window

    def _read(self, spans: Sequence[Span]) -> pl.DataFrame:
        rows = self.reader.read_spans(spans, "sent_ts").select(HISTORY_COLUMNS)
        return _completed(polars_frame(rows))

    def observe(self, latency: pa.Table) -> None:
        """Follow the rows a batch wrote to control_request_latency (those of the clusters kept here)."""
        if not self._rows or latency.num_rows == 0:
            return
        mine = latency.filter(pc.is_in(latency["cluster"], pa.array(list(self._rows))))
        if mine.num_rows == 0:
            return
        new = _completed(polars_frame(mine.select(HISTORY_COLUMNS)))
        for (cluster,), rows in new.partition_by("cluster", as_dict=True).items():
            self._keep(str(cluster), pl.concat([self._rows[str(cluster)], rows], how="vertical_relaxed"))

    def _keep(self, cluster: str, rows: pl.DataFrame) -> None:
        rows = rows.unique("request_key", keep="last", maintain_order=True)
        newest = rows.get_column("sent_ts").max()
        if isinstance(newest, dt.datetime):
            cut = newest - self.window - TRIM_SLACK
            if cut > self._from[cluster]:
                rows = rows.filter(pl.col("sent_ts") >= cut)
                self._from[cluster] = cut
        self._kept(cluster, rows, rows.height, MAX_ROWS_PER_CLUSTER, self.window)

    def _slice(self, rows: pl.DataFrame, lo: dt.datetime, hi: dt.datetime) -> pl.DataFrame:
        return rows.filter(pl.col("sent_ts").is_between(lo, hi))

    def rows_for(self, slow: Sequence[dict[str, Any]]) -> pl.DataFrame:
        """The completed requests the baselines of `slow` (candidates) read: of their clusters, from the window
        before the earliest of each cluster's (pipelines.detection.baselines.history_spans)."""
        out = self._spans(history_spans(slow, self.window))
        return pl.concat(out, how="vertical_relaxed") if out else pl.DataFrame()
