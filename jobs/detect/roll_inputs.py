"""The roll-safety inputs of a log batch's shutdowns, read from the lake on the driver (ROLL_TOO_FAST:
pipelines.detection.roll_detectors): metric samples of ROLL_SIGNALS over the membership window before each
cluster's shutdowns, control requests sent within the in-flight window before them, the control-request alerts
open then, and the gates `planewatch roll` recorded before them (roll_steps)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl
import pyarrow.compute as pc

from lake.read import LatestTable
from pipelines.detection.roll_detectors import GATE_VOUCHES_S
from pipelines.roll_safety import (
    CONTROL_REQUEST_ALERTS,
    DEFAULT_THRESHOLDS,
    ROLL_SIGNALS,
    RollThresholds,
    utc_frame,
    with_subject,
)
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, ROLL_STEPS

__all__ = ["RollInputs"]

# how far past the latest shutdown the samples are read (a scrape after it says the samples have reached it)
SAMPLES_AFTER_S = 60.0
_SAMPLE_COLUMNS = ["cluster", "broker_id", "signal", "attribute", "labels", "value", "ts"]
_REQUEST_COLUMNS = ["cluster", "broker_id", "request", "sent_ts", "finished_ts", "status"]
_ALERT_COLUMNS = ["cluster", "type", "broker_id", "started_at", "resolved_at"]
_GATE_COLUMNS = ["cluster", "node", "verdict", "at"]


class RollInputs:
    """Readers of the three tables, kept up to date incrementally (lake.read.LatestTable)."""

    def __init__(self, table_path: Callable[[str], str], th: RollThresholds = DEFAULT_THRESHOLDS) -> None:
        self.th = th
        self.samples = LatestTable(table_path(METRIC_SAMPLES.name), METRIC_SAMPLES.to_arrow())
        self.requests = LatestTable(table_path(CONTROL_REQUEST_LATENCY.name), CONTROL_REQUEST_LATENCY.to_arrow())
        self.alerts = LatestTable(table_path(ALERTS.name), ALERTS.to_arrow())
        self.steps = LatestTable(table_path(ROLL_STEPS.name), ROLL_STEPS.to_arrow())

    def spans(self, shutdowns: pl.DataFrame, before_s: float, after_s: float = 0.0
               ) -> list[tuple[str, dt.datetime, dt.datetime]]:
        per = shutdowns.group_by("cluster").agg(lo=pl.col("ts").min(), hi=pl.col("ts").max())
        return [(r["cluster"], r["lo"] - dt.timedelta(seconds=before_s), r["hi"] + dt.timedelta(seconds=after_s))
                for r in per.iter_rows(named=True)]

    def reached(self, shutdowns: pl.DataFrame) -> pl.DataFrame:
        """Per cluster of `shutdowns`, its newest sample from its first shutdown to SAMPLES_AFTER_S past its last
        (`_newest`; a cluster without any is absent): a short read, done while shutdowns wait for their samples."""
        none = pl.DataFrame(schema={"cluster": pl.String, "_newest": pl.Datetime("us", "UTC")})
        if not self.samples.exists():
            return none
        rows = self.samples.read_spans(self.spans(shutdowns, 0.0, SAMPLES_AFTER_S),
                                       where=pc.field("signal").isin(list(ROLL_SIGNALS))).select(["cluster", "ts"])
        if rows.num_rows == 0:
            return none
        return utc_frame(rows).group_by("cluster").agg(_newest=pl.col("ts").max())

    def read(self, shutdowns: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(samples, requests, alerts) for `shutdowns` (cluster, ts); a table not written yet gives no rows."""
        clusters = shutdowns.get_column("cluster").unique().to_list()
        samples = METRIC_SAMPLES.to_arrow(_SAMPLE_COLUMNS).empty_table()
        requests = CONTROL_REQUEST_LATENCY.to_arrow(_REQUEST_COLUMNS).empty_table()
        alerts = ALERTS.to_arrow(_ALERT_COLUMNS).empty_table()
        if self.samples.exists():
            samples = self.samples.read_spans(self.spans(shutdowns, self.th.membership_s),
                                              where=pc.field("signal").isin(list(ROLL_SIGNALS))).select(
                                                  _SAMPLE_COLUMNS)
        if self.requests.exists():
            requests = self.requests.read_spans(self.spans(shutdowns, self.th.in_flight_window_s),
                                                column="sent_ts").select(_REQUEST_COLUMNS)
        if self.alerts.exists():
            alerts = self.alerts.read(where=pc.field("cluster").isin(clusters)
                                      & pc.field("type").isin(list(CONTROL_REQUEST_ALERTS))).select(_ALERT_COLUMNS)
        return with_subject(utc_frame(samples)), utc_frame(requests), utc_frame(alerts)

    def gates(self, shutdowns: pl.DataFrame) -> pl.DataFrame:
        """The `planewatch roll` gates (roll_steps, kind gate) of the shutdowns' clusters from GATE_VOUCHES_S before
        their first shutdown on (cluster, node, verdict, at); none when no roll recorded any."""
        none = pl.DataFrame(schema={"cluster": pl.String, "node": pl.Int32, "verdict": pl.String,
                                    "at": pl.Datetime("us", "UTC")})
        if not self.steps.exists():
            return none
        rows = self.steps.read(where=pc.field("cluster").isin(shutdowns.get_column("cluster").unique().to_list())
                               & (pc.field("kind") == "gate"))
        if rows.num_rows == 0:
            return none
        lo = shutdowns.get_column("ts").min() - dt.timedelta(seconds=GATE_VOUCHES_S)  # type: ignore[operator]
        return utc_frame(rows.select(_GATE_COLUMNS)).filter(pl.col("at") >= lo)
