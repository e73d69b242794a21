"""KRaft control-plane rules over a log batch's state_change_events (the active controller's controller.log, the
brokers' server.log), as Apache Kafka 4.4 logs them.

* BROKER_FENCED: the active controller fenced a broker because its session timed out (no heartbeat within
  `broker.session.timeout.ms`, 9 s by default): the broker's partitions moved their leaders and ISR away. A broker
  that shut down cleanly (a rolling restart) is fenced by its granted controlled shutdown; Kafka 4.4 still logs a
  session-timeout fencing about 10 s later, which raises nothing (SHUTDOWN_ECHO_S).
* BROKER_HEARTBEAT_TIMEOUT: the active controller timed out a broker's heartbeats in its event queue (the queue was
  overloaded: KAFKA-15019); a broker whose heartbeats keep timing out is fenced next.
* QUORUM_UNSTABLE: the controller quorum elected a new active controller (`Becoming the active controller at epoch
  E`) again and again: `quorum_window_s` of event time held the threshold's number of elections. One election (a
  cluster's start, a controller restarted in a roll) raises nothing. The elections of the window before the batch
  come from state_change_events (the log rules read them back when a batch holds an election).

The alert's broker is the broker the line is about (`target_broker_id`), not the controller node that logged it.
One candidate per broker and batch; its value counts the lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import Evidence, LogRows, Rows, candidate_rows, evidence, level, severity
from schemas.alerts import AlertType
from schemas.events import Event

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig


__all__ = ["ELECTION_COLUMNS", "KRAFT_EVENTS", "SHUTDOWN_COLUMNS", "SHUTDOWN_ECHO_S", "detect_broker_fenced",
           "detect_broker_heartbeat_timeout", "detect_quorum_unstable"]

# The state_change_events the KRaft rules read (the log batch keeps these rows for them).
KRAFT_EVENTS = (Event.KRAFT_BROKER_FENCED, Event.KRAFT_HEARTBEAT_EXPIRED, Event.KRAFT_BROKER_UNFENCED,
                Event.KRAFT_ACTIVE_CONTROLLER, Event.KRAFT_SHUTDOWN_GRANTED)
# A session-timeout fencing this soon after the broker's granted controlled shutdown is that shutdown's echo:
# Apache Kafka 4.4.0 logs `Fencing broker N ... because its session has timed out.` ~10 s (the session) after a
# broker that shut down cleanly stopped heartbeating, though it is fenced already. Twice the default session (9 s)
# and a margin.
SHUTDOWN_ECHO_S = 30.0
# What BROKER_FENCED reads of a granted shutdown's row (read back from state_change_events when it is not in the
# fencing's batch).
SHUTDOWN_COLUMNS = ["cluster", "ts", "target_broker_id"]
# What QUORUM_UNSTABLE reads of an election's row.
ELECTION_COLUMNS = ["cluster", "ts", "controller_id", "controller_epoch", "message"]
# Lines of one candidate quoted in its evidence.
LINES_QUOTED = 5


def _per_broker(state_changes: pl.DataFrame, event: Event) -> pl.DataFrame:
    """The batch's `event` lines per (cluster, broker they are about): count, first and last time, the controller
    node that logged them, the lines."""
    rows = state_changes.filter((pl.col("event") == event.value).fill_null(False)
                                & pl.col("target_broker_id").is_not_null())
    return (rows.sort("ts").group_by("cluster", "target_broker_id", maintain_order=True)
            .agg(n=pl.len(), first_ts=pl.col("ts").min(), last_ts=pl.col("ts").max(),
                 controller=pl.col("controller_id").drop_nulls().last(),
                 lines=pl.col("message").head(LINES_QUOTED))
            .rename({"target_broker_id": "broker_id"}))


def _unfenced(state_changes: pl.DataFrame) -> pl.DataFrame:
    """When each broker was unfenced again in the batch (the controller granted its request), per broker."""
    rows = state_changes.filter((pl.col("event") == Event.KRAFT_BROKER_UNFENCED.value).fill_null(False))
    return rows.group_by("cluster", "target_broker_id").agg(unfenced_at=pl.col("ts").max()).rename(
        {"target_broker_id": "broker_id"})


def _kraft(state_changes: pl.DataFrame, cfg: DetectionConfig, t: AlertType, event: Event) -> pl.DataFrame:
    found = _per_broker(state_changes, event)
    value = pl.col("n").cast(pl.Float64)
    return found.with_columns(value=value, ts=pl.col("last_ts"), severity=severity(cfg, t, value),
                              threshold=level(cfg, t, "warning"), listener=pl.lit(None, dtype=pl.String))


def _without_shutdown_echoes(state_changes: pl.DataFrame, granted: pl.DataFrame | None) -> pl.DataFrame:
    """The batch's rows without the fencings that echo a granted controlled shutdown of the same broker within
    SHUTDOWN_ECHO_S before (`granted`: such rows before the batch; the batch's own count too)."""
    shutdowns = state_changes.filter((pl.col("event") == Event.KRAFT_SHUTDOWN_GRANTED.value).fill_null(False))
    shutdowns = shutdowns.select(SHUTDOWN_COLUMNS)
    if granted is not None:
        shutdowns = pl.concat([shutdowns, granted.select(SHUTDOWN_COLUMNS)], how="vertical_relaxed")
    fenced = (pl.col("event") == Event.KRAFT_BROKER_FENCED.value).fill_null(False)
    if shutdowns.is_empty() or state_changes.filter(fenced).is_empty():
        return state_changes
    echo = (state_changes.with_row_index("_row").filter(fenced)
            .join(shutdowns.rename({"ts": "_granted"}), on=["cluster", "target_broker_id"])
            .filter((pl.col("_granted") <= pl.col("ts"))
                    & (pl.col("ts") - pl.col("_granted") <= pl.duration(seconds=SHUTDOWN_ECHO_S)))
            .get_column("_row").unique())
    return state_changes.with_row_index("_row").filter(~pl.col("_row").is_in(echo.implode())).drop("_row")


def detect_broker_fenced(batch: LogRows, cfg: DetectionConfig) -> Rows:
    """BROKER_FENCED: `Fencing broker N at epoch E because its session has timed out.` on the active controller,
    unless it echoes the broker's granted controlled shutdown (in the batch, or `batch.granted`: those rows from
    before it)."""
    t = AlertType.BROKER_FENCED
    state_changes = _without_shutdown_echoes(batch.state_changes, batch.granted)
    rows = _kraft(state_changes, cfg, t, Event.KRAFT_BROKER_FENCED)
    if rows.is_empty():
        return []
    rows = rows.join(_unfenced(state_changes), on=["cluster", "broker_id"], how="left").with_columns(
        unfenced_at=pl.when(pl.col("unfenced_at") >= pl.col("last_ts")).then(pl.col("unfenced_at")))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        by = "the active controller" if r["controller"] is None else f"the active controller (node {r['controller']})"
        summary = (f"Broker {r['broker_id']} was fenced by {by}: no heartbeat reached it within the broker session "
                   "timeout (broker.session.timeout.ms), so the partitions it led elected other leaders and it left "
                   "every ISR. A paused or starved broker (GC, a frozen host), a partition between it and the "
                   "controller, or an overloaded controller (BROKER_HEARTBEAT_TIMEOUT) causes it")
        if r["unfenced_at"] is not None:
            summary += "; it was unfenced again since"
        return summary, evidence(r, ("n", "first_ts", "last_ts", "controller", "unfenced_at", "lines"))

    return candidate_rows(rows, t, describe)


def detect_broker_heartbeat_timeout(batch: LogRows, cfg: DetectionConfig) -> Rows:
    """BROKER_HEARTBEAT_TIMEOUT: `processExpiredBrokerHeartbeat: controller event queue overloaded. Timed out
    heartbeat from broker N.` on the active controller."""
    t = AlertType.BROKER_HEARTBEAT_TIMEOUT
    rows = _kraft(batch.state_changes, cfg, t, Event.KRAFT_HEARTBEAT_EXPIRED)

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        node = "" if r["controller"] is None else f" (node {r['controller']})"
        summary = (f"The active controller{node} timed out {r['n']} heartbeat(s) of broker {r['broker_id']} in its "
                   "event queue: the controller is overloaded (its event queue time, CONTROLLER_EVENT_QUEUE_DELAY), "
                   "and a broker whose heartbeats keep timing out is fenced (KAFKA-15019)")
        return summary, evidence(r, ("n", "first_ts", "last_ts", "controller", "lines"))

    return candidate_rows(rows, t, describe)


def detect_quorum_unstable(rows_in: LogRows, cfg: DetectionConfig) -> Rows:
    """QUORUM_UNSTABLE: per cluster, the most elections within a `quorum_window_s` that holds one of the batch's
    elections (windows end at each election from the batch's first to a window past its last: an election that
    arrives late still counts with those after it). `rows_in.elections`: every KRAFT_ACTIVE_CONTROLLER row from a
    window before the batch's first to a window after its last (ELECTION_COLUMNS; an election logged twice counts
    once; None: the batch's own ones only)."""
    t = AlertType.QUORUM_UNSTABLE
    if rows_in.state_changes.is_empty():
        return []
    batch = rows_in.state_changes.filter((pl.col("event") == Event.KRAFT_ACTIVE_CONTROLLER.value).fill_null(False))
    if batch.is_empty():
        return []
    elections = batch.head(0).select(ELECTION_COLUMNS) if rows_in.elections is None else rows_in.elections
    window = pl.duration(microseconds=int(cfg.quorum_window_s * 1e6))
    known = (pl.concat([elections.select(ELECTION_COLUMNS), batch.select(ELECTION_COLUMNS)])
             .unique(["cluster", "controller_id", "controller_epoch"], keep="first").sort("ts"))
    span = batch.group_by("cluster").agg(lo=pl.col("ts").min(), hi=pl.col("ts").max() + window)
    ends = (known.select("cluster", "ts").join(span, on="cluster")
            .filter(pl.col("ts").is_between(pl.col("lo"), pl.col("hi"))).select("cluster", "ts").unique())
    counted = (ends.join(known, on="cluster", suffix="_e")
               .filter((pl.col("ts_e") > pl.col("ts") - window) & (pl.col("ts_e") <= pl.col("ts")))
               .sort("ts_e")
               .group_by("cluster", "ts", maintain_order=True)
               .agg(n=pl.len(), first_ts=pl.col("ts_e").min(), last_ts=pl.col("ts_e").max(),
                    controller=pl.col("controller_id").last(),
                    elections=pl.format("node {} at epoch {} ({})", pl.col("controller_id"),
                                        pl.col("controller_epoch"), pl.col("ts_e").dt.strftime("%H:%M:%S%.3f"))))
    worst = counted.sort("n", "ts", descending=[True, True]).unique("cluster", keep="first", maintain_order=True)
    value = pl.col("n").cast(pl.Float64)
    rows = (worst.filter(value >= level(cfg, t, "warning"))
            .with_columns(value=value, severity=severity(cfg, t, value), threshold=level(cfg, t, "warning"),
                          listener=pl.lit(None, dtype=pl.String), broker_id=pl.lit(None, dtype=pl.Int32),
                          elections=pl.col("elections").list.tail(LINES_QUOTED))
            .drop("ts").rename({"last_ts": "ts"}).with_columns(last_ts=pl.col("ts")))
    minutes = cfg.quorum_window_s / 60

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        summary = (f"The KRaft controller quorum elected {r['n']} active controllers within {minutes:g} minutes (the "
                   f"latest: node {r['controller']}): each election leaves the cluster without an active controller "
                   "for a while (no metadata changes, no fencing or unfencing). Controllers that lose their "
                   "leadership again and again are paused (GC), starved, or cut off from each other")
        return summary, evidence(r, ("n", "first_ts", "last_ts", "controller", "elections"))

    return candidate_rows(rows, t, describe)
