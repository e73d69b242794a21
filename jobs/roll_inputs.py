"""The roll-safety inputs of a log batch's shutdowns, read from the lake on the driver (ROLL_TOO_FAST:
pipelines.detection.roll_detectors): metric samples of ROLL_SIGNALS over the membership window before each
cluster's shutdowns, control requests sent within the in-flight window before them, and the control-request alerts
open then."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.roll_safety import CONTROL_REQUEST_ALERTS, DEFAULT_THRESHOLDS, ROLL_SIGNALS, RollThresholds
from schemas.lake_read import LatestTable
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_SAMPLES

__all__ = ["RollInputs"]

# how far past the latest shutdown the samples are read (a scrape after it says the samples have reached it)
SAMPLES_AFTER_S = 60.0
_SAMPLE_COLUMNS = ["cluster", "broker_id", "signal", "attribute", "value", "ts"]
_REQUEST_COLUMNS = ["cluster", "broker_id", "request", "sent_ts", "finished_ts", "status"]
_ALERT_COLUMNS = ["cluster", "type", "broker_id", "started_at", "resolved_at"]


def _polars(t: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(t)
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(pl.col(c).dt.convert_time_zone("UTC").dt.cast_time_unit("us")
                              for c, typ in frame.schema.items() if isinstance(typ, pl.Datetime))


class RollInputs:
    """Readers of the three tables, kept up to date incrementally (schemas.lake_read.LatestTable)."""

    def __init__(self, table_path: Callable[[str], str], th: RollThresholds = DEFAULT_THRESHOLDS) -> None:
        self.th = th
        self.samples = LatestTable(table_path(METRIC_SAMPLES.name), METRIC_SAMPLES.to_arrow())
        self.requests = LatestTable(table_path(CONTROL_REQUEST_LATENCY.name), CONTROL_REQUEST_LATENCY.to_arrow())
        self.alerts = LatestTable(table_path(ALERTS.name), ALERTS.to_arrow())

    def _spans(self, shutdowns: pl.DataFrame, before_s: float, after_s: float = 0.0
               ) -> list[tuple[str, dt.datetime, dt.datetime]]:
        per = shutdowns.group_by("cluster").agg(lo=pl.col("ts").min(), hi=pl.col("ts").max())
        return [(r["cluster"], r["lo"] - dt.timedelta(seconds=before_s), r["hi"] + dt.timedelta(seconds=after_s))
                for r in per.iter_rows(named=True)]

    def read(self, shutdowns: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(samples, requests, alerts) for `shutdowns` (cluster, ts); a table not written yet gives no rows."""
        clusters = shutdowns.get_column("cluster").unique().to_list()
        samples = METRIC_SAMPLES.to_arrow(_SAMPLE_COLUMNS).empty_table()
        requests = CONTROL_REQUEST_LATENCY.to_arrow(_REQUEST_COLUMNS).empty_table()
        alerts = ALERTS.to_arrow(_ALERT_COLUMNS).empty_table()
        if self.samples.exists():
            # a little past the shutdowns too: whether the cluster's samples have reached them yet
            samples = self.samples.read_spans(self._spans(shutdowns, self.th.membership_s, SAMPLES_AFTER_S),
                                              where=pc.field("signal").isin(list(ROLL_SIGNALS))).select(
                                                  _SAMPLE_COLUMNS)
        if self.requests.exists():
            requests = self.requests.read_spans(self._spans(shutdowns, self.th.in_flight_window_s),
                                                column="sent_ts").select(_REQUEST_COLUMNS)
        if self.alerts.exists():
            alerts = self.alerts.read(where=pc.field("cluster").isin(clusters)
                                      & pc.field("type").isin(list(CONTROL_REQUEST_ALERTS))).select(_ALERT_COLUMNS)
        return _polars(samples), _polars(requests), _polars(alerts)
