"""How every detector makes its candidates (polars): the inputs the rules read (:class:`LogRows`,
:class:`ControlRequests`; the metric rules read a frame of windows), per-cluster levels, severity, the steps of a
metric window's samples, the candidate rows and the text of their summaries and evidence.

Every detector runs on the driver over what one micro-batch produced, collected once to Arrow (request rows, log
rows, the metric windows it updated): at most thousands of rows, where polars answers in milliseconds what a Spark
plan per rule took seconds to plan and run on a busy machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from schemas.tables import STATE_CHANGE_EVENTS

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "CONTROL_PLANE_PREFIX",
    "CONTROL_PLANE_QUEUE_CAPACITY",
    "NANOS_PER_SECOND",
    "ControlRequests",
    "Evidence",
    "LogRows",
    "Rows",
    "attribute_key",
    "candidate_rows",
    "evidence",
    "fmt1",
    "frame",
    "half_up",
    "level",
    "setting",
    "severity",
    "steps",
    "window_text",
    "without_control_plane",
]

# A candidate's evidence: a JSON object whose values are JSON values already (times as ISO-8601 text); baselines add
# to it, and the alert row serialises it once.
Evidence = dict[str, Any]

# Candidate alerts: the fields of lifecycle.Candidate, one dict per candidate.
Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class LogRows:
    """What the log rules read of a log batch: its state_change_events and request_events rows, the KRaft quorum's
    elections of the window before it (`elections`, ELECTION_COLUMNS; None when the batch holds none) and granted
    controlled shutdowns from before it (`granted`; None: none read)."""

    state_changes: pl.DataFrame
    requests: pl.DataFrame
    elections: pl.DataFrame | None = None
    granted: pl.DataFrame | None = None


@dataclass(frozen=True)
class ControlRequests:
    """What the latency rules read: control_request_latency rows the pairing timed, and the state_change_events of
    their time (fetcher and lock lines for LOCK_CONTENTION, the controller elections that excuse the requests of the
    controller they replaced)."""

    latency: pl.DataFrame
    state_changes: pl.DataFrame

    @classmethod
    def of(cls, latency: pl.DataFrame, state_changes: pl.DataFrame | None = None) -> ControlRequests:
        """`latency` with `state_changes`, or with no state_change_events (an empty frame of that table)."""
        if state_changes is None:
            state_changes = frame(STATE_CHANGE_EVENTS.to_arrow().empty_table())
        return cls(latency, state_changes)


# Control-plane signals are named so by Kafka (ControlPlaneRequestQueueSize, ControlPlane...IdlePercent).
CONTROL_PLANE_PREFIX = "ControlPlane"
# Kafka hard-codes the control-plane RequestChannel capacity (SocketServer.scala, KIP-291).
CONTROL_PLANE_QUEUE_CAPACITY = 20
# Kafka's idle and blocked "percent" meters are marked in nanoseconds (FACTS.md section 3).
NANOS_PER_SECOND = 1e9


def _per_cluster(cfg: DetectionConfig, pick: Callable[[DetectionConfig], float]) -> pl.Expr:
    """`pick(cfg_for_cluster)` for each row's cluster (the overrides' clusters, else the default)."""
    default = float(pick(cfg))
    mapping = {name: float(pick(cfg.for_cluster(name))) for name in sorted(cfg.overrides)}
    if not mapping:
        return pl.lit(default, dtype=pl.Float64)
    return pl.col("cluster").replace_strict(mapping, default=default, return_dtype=pl.Float64)


def level(cfg: DetectionConfig, alert_type: str, which: str) -> pl.Expr:
    """The `warning` or `critical` threshold of `alert_type` for each row's cluster."""
    return _per_cluster(cfg, lambda c: float(getattr(c.threshold(alert_type), which)))


def setting(cfg: DetectionConfig, name: str) -> pl.Expr:
    """A numeric DetectionConfig field, per cluster."""
    return _per_cluster(cfg, lambda c: float(getattr(c, name)))


def severity(cfg: DetectionConfig, alert_type: str, value: pl.Expr) -> pl.Expr:
    """'critical' / 'warning' / null for `value` against the rule's per-cluster levels."""
    warn, crit = level(cfg, alert_type, "warning"), level(cfg, alert_type, "critical")
    if cfg.threshold(alert_type).below:
        return pl.when(value <= crit).then(pl.lit("critical")).when(value < warn).then(pl.lit("warning"))
    return pl.when(value >= crit).then(pl.lit("critical")).when(value >= warn).then(pl.lit("warning"))


def frame(tbl: pa.Table) -> pl.DataFrame:
    """An Arrow table of one micro-batch's rows as the polars frame the rules read."""
    out = pl.from_arrow(tbl)
    assert isinstance(out, pl.DataFrame)
    return out


def attribute_key() -> pl.Expr:
    """A window's metric attribute, lower-cased ('' for none): how the rules compare attributes."""
    return pl.col("attribute").fill_null("").str.to_lowercase()


def without_control_plane(rows: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (cluster, broker_id, window_start, ...) minus those of a broker that reports a control-plane series in
    the same window (KIP-291 configured: its controller requests do not share the data-plane queue)."""
    keys = ["cluster", "broker_id", "window_start"]
    planes = windows.filter(pl.col("sig").str.starts_with(CONTROL_PLANE_PREFIX)).select(keys).unique()
    return rows.join(planes, on=keys, how="anti")


def steps(rows: pl.DataFrame, *extra: str) -> pl.DataFrame:
    """One row per sample of each window (`_wid`, `ts`, `value`, `extra` columns, in time order) with the previous
    sample of the window (`prev_ts`, `prev_value`; null for the first)."""
    pts = (rows.select("_wid", *extra, "points").explode("points").unnest("points")
           .drop_nulls("ts").sort("_wid", "ts", "value"))
    return pts.with_columns(prev_ts=pl.col("ts").shift(1).over("_wid"),
                            prev_value=pl.col("value").shift(1).over("_wid"))


def candidate_rows(frame: pl.DataFrame, alert_type: str,
                   describe: Callable[[Mapping[str, Any]], tuple[str, Evidence]]) -> list[dict[str, Any]]:
    """Candidate alerts (the fields of lifecycle.Candidate) from `frame`'s rows that have a severity and a time;
    `frame` holds severity, cluster, broker_id, listener, ts, value, threshold and whatever `describe` reads to give
    each row its (summary, evidence)."""
    out: list[dict[str, Any]] = []
    for r in frame.filter(pl.col("severity").is_not_null() & pl.col("ts").is_not_null()).to_dicts():
        summary, ev = describe(r)
        out.append({"type": alert_type, "severity": r["severity"], "cluster": r["cluster"],
                    "broker_id": None if r["broker_id"] is None else int(r["broker_id"]),
                    "listener": r["listener"], "ts": r["ts"], "value": float(r["value"]),
                    "threshold": float(r["threshold"]), "summary": summary, "evidence": ev})
    return out


def fmt1(x: float) -> str:
    """One decimal with thousands separators (1,234.5)."""
    return f"{x:,.1f}"


def half_up(x: float) -> int:
    """`x` rounded to an integer, halves away from zero (Spark's ``round``)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _hms(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%H:%M:%S")


def window_text(r: Mapping[str, Any], samples: bool = True) -> str:
    """`` over 08:00:00-08:00:30 UTC (6 samples)``."""
    tail = f" ({r['samples']} samples)" if samples else ""
    return f" over {_hms(r['window_start'])}-{_hms(r['window_end'])} UTC{tail}"


def _iso_ms(t: datetime) -> str:
    """``2021-03-02T08:00:01.006Z`` (UTC, milliseconds)."""
    u = t.astimezone(UTC)
    return u.strftime("%Y-%m-%dT%H:%M:%S.") + f"{u.microsecond // 1000:03d}Z"


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime):
        return _iso_ms(v)
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


def evidence(r: Mapping[str, Any], fields: Iterable[str], **extra: Any) -> Evidence:
    """The evidence of `fields` of `r` (and `extra`), nulls left out, times as ISO-8601 UTC: a JSON object, serialised
    once, when the alert row is made (pipelines.detection.lifecycle)."""
    doc = {**{f: r.get(f) for f in fields}, **extra}
    return {k: _json_value(v) for k, v in doc.items() if v is not None}
