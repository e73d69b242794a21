"""Parsers for Kafka's own log and metric formats, as Spark DataFrame/Column functions (built-in functions only).

Public surface (used by the streaming jobs inside ``foreachBatch`` and by ``planewatch parse --engine spark``):

* :func:`parse_log_lines` - bronze ``raw_logs`` rows -> :class:`ParsedLogs` (state_change / requests / rejected /
  unused). Every input row lands in exactly one of the four.
* :func:`parse_metric_lines` - bronze ``raw_metrics`` rows -> :class:`ParsedMetrics` (samples / rejected / unused).
* :func:`classify_log_kind`, :func:`broker_id_from_path` - Column helpers for sources.
* :data:`EVENTS` - canonical ``event`` names of ``state_change_events``; :data:`SIGNALS` - canonical metric signals.

The same declarations (:mod:`pipelines.parsing.patterns`, :mod:`pipelines.parsing.metric_names`) drive a pure-Python
engine (:mod:`pipelines.parsing.pylogs`, :mod:`pipelines.parsing.pymetrics`) that produces identical rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.parsing.metric_names import SIGNALS
from pipelines.parsing.patterns import EVENTS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "EVENTS",
    "SIGNALS",
    "ParsedLogs",
    "ParsedMetrics",
    "broker_id_from_path",
    "classify_log_kind",
    "may_route",
    "parse_log_lines",
    "parse_metric_lines",
    "route_frames",
    "routed_lines",
]


@dataclass(frozen=True)
class ParsedLogs:
    """The four outputs of :func:`parse_log_lines`; `routed` is the one wide frame they are all selected from."""

    state_change: DataFrame
    requests: DataFrame
    rejected: DataFrame
    unused: DataFrame
    routed: DataFrame | None = None

    def unpersist(self) -> None:
        """Release the cached routed frame (after `parse_log_lines(..., persist=True)`)."""
        if self.routed is not None:
            self.routed.unpersist()


@dataclass(frozen=True)
class ParsedMetrics:
    """The three outputs of :func:`parse_metric_lines`."""

    samples: DataFrame
    rejected: DataFrame
    unused: DataFrame
    routed: DataFrame | None = None

    def unpersist(self) -> None:
        """Release the cached routed frame (after `parse_metric_lines(..., persist=True)`)."""
        if self.routed is not None:
            self.routed.unpersist()


def parse_log_lines(raw: DataFrame, cluster_tz: str = "UTC", persist: bool = False) -> ParsedLogs:
    """Parse bronze log lines (RAW_LOGS columns) into the silver tables.

    Args:
        raw: rows with the RAW_LOGS columns (continuation lines already joined into their line with ``\\n``).
        cluster_tz: the zone the brokers' log4j timestamps are written in (an IANA name); results are UTC.
        persist: cache the parsed rows so writing all four outputs parses each line once (call
            :meth:`ParsedLogs.unpersist` afterwards). Without it each output re-runs the parse.

    Returns:
        state_change (STATE_CHANGE_EVENTS columns), requests (REQUEST_EVENTS), rejected (QUARANTINE, stage
        ``parse``), unused (RAW_LOGS columns + ``reason``: Kafka lines that carry nothing planewatch uses).
    """
    from pipelines.parsing.spark_logs import parse_logs_routed, route_outputs

    routed = parse_logs_routed(raw, cluster_tz)
    if persist:
        routed = routed.persist()
    state, requests, rejected, unused = route_outputs(routed)
    return ParsedLogs(state, requests, rejected, unused, routed)


def parse_metric_lines(raw: DataFrame, persist: bool = False) -> ParsedMetrics:
    """Parse bronze metric records (RAW_METRICS columns): JSON lines or Prometheus exposition lines.

    ``# HELP`` / ``# TYPE`` comments and blank lines go to `unused`; records that are not a sample (bad JSON, JSON
    that is not an object, a value that is not a number, no metric name) go to `rejected`; the rest become
    METRIC_SAMPLES rows with one canonical ``signal`` per metric whatever the exporter's naming convention.
    """
    from pipelines.parsing.spark_metrics import parse_metrics_routed, route_metric_outputs

    routed = parse_metrics_routed(raw)
    if persist:
        routed = routed.persist()
    samples, rejected, unused = route_metric_outputs(routed)
    return ParsedMetrics(samples, rejected, unused, routed)


def routed_lines(raw: DataFrame, family: str, cluster_tz: str = "UTC") -> DataFrame:
    """Bronze rows of `family` (logs | metrics) -> one wide row per record with its `_route`: the parser's own
    routes (logs: state_change, request, rejected, unused; metrics: sample, rejected, unused)."""
    if family == "logs":
        from pipelines.parsing.spark_logs import parse_logs_routed

        return parse_logs_routed(raw, cluster_tz)
    from pipelines.parsing.spark_metrics import parse_metrics_routed

    return parse_metrics_routed(raw)


def route_frames(routed: DataFrame, family: str) -> dict[str, DataFrame]:
    """The rows of each route that has a table (silver routes and `rejected`), in that table's columns."""
    if family == "logs":
        from pipelines.parsing.spark_logs import route_outputs

        state, requests, rejected, _ = route_outputs(routed)
        return {"state_change": state, "request": requests, "rejected": rejected}
    from pipelines.parsing.spark_metrics import route_metric_outputs

    samples, rejected, _ = route_metric_outputs(routed)
    return {"sample": samples, "rejected": rejected}


def may_route(route: str, family: str) -> Column:
    """A cheap test on bronze columns that every record of `route` passes (a necessary condition, no regex), so a
    job writing only that route parses only those records; true where there is no cheaper test."""
    from pyspark.sql import functions as F

    if family == "logs" and route == "request":
        from pipelines.parsing.stages import REQUEST_PREFIX

        # a request line's message starts with the prefix; a wrapped line's layout is read with its newlines removed
        return F.contains(F.translate(F.coalesce(F.col("line"), F.lit("")), "\n\r", ""), F.lit(REQUEST_PREFIX))
    return F.lit(True)


def classify_log_kind(path_col: Column, line_col: Column) -> Column:
    """"state-change" | "request" | "server" | "controller" | "unknown": by file name, else by the line's logger."""
    from pipelines.parsing.spark_paths import classify_log_kind as impl

    return impl(path_col, line_col)


def broker_id_from_path(path_col: Column) -> Column:
    """The id of the innermost ``broker-<id>`` (``broker<id>``, ``broker_<id>``) path element; null if none."""
    from pipelines.parsing.spark_paths import broker_id_from_path as impl

    return impl(path_col)
