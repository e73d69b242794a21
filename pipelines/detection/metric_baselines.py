"""Baselines of a metric alert: is this broker's signal out of line with its own history, or with its peers now?

Pure (polars). Two comparisons, each in the alert's own measure (an idle or blocked fraction, a queue length in
requests, milliseconds, a count of elections):

* **Peers now** (:func:`with_peers`, inside the metric rules): per other broker, its worst value of the same
  measure over its windows of the same series that overlap the alert's window, and the median of those (the windows
  of a micro-batch hold every broker scraped in it). A saturated broker whose peers idle at 95% is that broker's
  problem; a whole cluster at 10% is load.
* **Its own history** (:func:`add_metric_baselines`): the broker's own quantile of the measure over the
  `detection.baseline_window_s` before the alert's window, from metric_rollups_1m (one value per minute: the
  minute's mean, or its highest for a rule that reads the highest sample, or the rise of a Count across minutes for
  meters read from their Count). The quantile is the tail on the alert's side: p90 where a higher value is worse,
  p10 where a lower one is (idle ratios), so "its own p10 97%" says its busiest tenth of minutes still idled 97%.
  Fewer than HISTORY_MIN_MINUTES minutes give no history quantile, only how little there was.

Each candidate's evidence gains a `baseline` object (`text` is the clause the incident shows) and its summary one
clause in brackets, as the slow requests' baselines (pipelines.detection.baselines) do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import NANOS_PER_SECOND, fmt1
from schemas.alerts import AlertType

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = ["HISTORY_MIN_MINUTES", "REQUEST_RULE_SPECS", "BaselineSpec", "MeasureKind", "add_metric_baselines",
           "baseline_text", "peers_baseline", "request_series", "with_peers"]

# A quantile of fewer one-minute values than this is a guess: the history is reported as too short.
HISTORY_MIN_MINUTES = 5
PEER_KEYS = ("cluster", "sig", "listener", "window_start")


class MeasureKind:
    """How a rule's measure reads (the metric rules' `kind`, and the request-metrics rules' milliseconds)."""

    RATIO = "ratio"
    QUEUE = "queue"
    MS = "ms"
    EVENTS = "events"


def _shown(kind: str, v: float) -> str:
    if kind == MeasureKind.RATIO:
        return f"{fmt1(v * 100)}%"
    if kind == MeasureKind.QUEUE:
        return f"{fmt1(v)} requests"
    if kind == MeasureKind.EVENTS:
        return f"{round(v)}"
    return f"{fmt1(v)} ms"


def with_peers(rows: pl.DataFrame, levels: pl.DataFrame, lower_is_worse: bool) -> pl.DataFrame:
    """`rows` (windows of one rule: PEER_KEYS, broker_id, window_end) with `_peers_median` and `_peers`: per OTHER
    broker, its worst `_level` (the lowest where `lower_is_worse`, else the highest) over its windows of the same
    series that overlap the row's window, then the median of those over the peers, and how many peers that is (null
    and 0: none). Overlapping, not the same start: brokers are scraped seconds apart, so one event's samples fall in
    windows a slide or two apart (Apache Kafka 4.4.0, a paused controller: broker 3's 20.8 s lag was scraped 6 s after
    its peers' 18 s, and the peers' windows of its start no longer held theirs)."""
    series = ["cluster", "sig", "listener"]
    lv = (levels.filter(pl.col("_level").is_not_null() & pl.col("broker_id").is_not_null())
          .select(*series, pl.col("broker_id").alias("_peer"), pl.col("window_start").alias("_ps"),
                  pl.col("window_end").alias("_pe"), "_level"))
    mine = rows.select(*PEER_KEYS, "window_end", "broker_id").unique()
    worst = pl.col("_level").min() if lower_is_worse else pl.col("_level").max()
    per_peer = (mine.join(lv, on=series, nulls_equal=True)
                .filter((pl.col("_peer") != pl.col("broker_id")) & (pl.col("_ps") < pl.col("window_end"))
                        & (pl.col("_pe") > pl.col("window_start")))
                .group_by(*PEER_KEYS, "broker_id", "_peer").agg(_level=worst))
    med = (per_peer.group_by(*PEER_KEYS, "broker_id")
           .agg(_peers_median=pl.col("_level").median(), _peers=pl.len().cast(pl.Int64)))
    return (rows.join(med, on=[*PEER_KEYS, "broker_id"], how="left", nulls_equal=True)
            .with_columns(pl.col("_peers").fill_null(0)))


def peers_baseline(r: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The `baseline` evidence of a window row with_peers gave its peers to (empty: no peer)."""
    if not r.get("_peers"):
        return {}
    return {"kind": kind, "peers_median": r["_peers_median"], "peers": r["_peers"]}


def baseline_text(b: dict[str, Any]) -> str | None:
    """The clause a `baseline` evidence object reads as (None: it holds no comparison)."""
    kind = str(b.get("kind") or MeasureKind.MS)
    parts = []
    minutes = round(float(b.get("window_s") or 0) / 60)
    if b.get("own") is not None:
        if kind == MeasureKind.EVENTS:
            parts.append(f"its own previous {b['own_minutes']} min: {_shown(kind, b['own'])} of these")
        else:
            parts.append(f"its own {b['own_quantile']} over the previous {minutes} min {_shown(kind, b['own'])} "
                         f"({b['own_minutes']} one-minute values)")
    elif b.get("own_minutes") is not None:
        parts.append(f"its own history: {b['own_minutes']} min only (fewer than {HISTORY_MIN_MINUTES})")
    if b.get("peers"):
        n = int(b["peers"])
        parts.append(f"its peers' median around the same time {_shown(kind, b['peers_median'])} ({n} broker"
                     f"{'s' if n != 1 else ''})")
    return "; ".join(parts) or None


def _minute_levels(rows: pl.DataFrame, kind: str, stat: str, from_count: bool) -> pl.Series:
    """One value per minute of a series' rollups (sorted by minute)."""
    rows = rows.sort("minute")
    if from_count or kind == MeasureKind.EVENTS:
        secs = (pl.col("minute") - pl.col("minute").shift(1)).dt.total_microseconds().cast(pl.Float64) / 1e6
        inc = pl.col("last") - pl.col("last").shift(1)
        ok = (inc >= 0) & (secs > 0)
        if kind == MeasureKind.EVENTS:
            return rows.select(pl.when(ok).then(inc)).to_series().drop_nulls()
        ratio = pl.min_horizontal(inc / (secs * NANOS_PER_SECOND), pl.lit(1.0))
        return rows.select(pl.when(ok).then(ratio)).to_series().drop_nulls()
    col = pl.col("max") if stat == "max" else pl.col("avg")
    if kind == MeasureKind.RATIO:
        col = pl.when(col > 1.0 + 1e-9).then(col / 100.0).otherwise(col)
    return rows.select(col).to_series().drop_nulls()


def _evidence(c: dict[str, Any]) -> dict[str, Any]:
    ev = c.get("evidence")
    return ev if isinstance(ev, dict) else {}


def _at(text: Any, default: dt.datetime) -> dt.datetime:
    if not isinstance(text, str):
        return default
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _series(ev: dict[str, Any]) -> pl.Expr:
    """A metric rule's series in metric_rollups_1m: its attribute and (raw) listener, as its evidence names them."""
    attr = pl.col("attribute").eq_missing(pl.lit(ev.get("attribute"), dtype=pl.String))
    return attr & pl.col("listener").eq_missing(pl.lit(ev.get("listener"), dtype=pl.String))


def request_series(ev: dict[str, Any]) -> pl.Expr:
    """A request-metrics rule's series in metric_rollups_1m: its request's 99th percentile (both spellings)."""
    return (pl.col("request").eq_missing(pl.lit(ev.get("request"), dtype=pl.String))
            & pl.col("attribute").is_in(["99thPercentile", "0.99"]))


@dataclass(frozen=True)
class BaselineSpec:
    """How an alert type's measure reads from one-minute rollups: its kind, the window statistic its rule reads
    (`max`: the minute's highest; else its mean), and which rollup rows are its series."""

    kind: str
    stat: str = "avg"
    series: Callable[[dict[str, Any]], pl.Expr] = _series


def add_metric_baselines(candidates: Sequence[dict[str, Any]], rollups: pl.DataFrame, window: dt.timedelta,
                         cfg: DetectionConfig, specs: dict[str, BaselineSpec]) -> None:
    """Give each metric candidate (in place) its own history from `rollups` (metric_rollups_1m rows of its cluster
    reaching `window` before it; empty: none read) and the bracketed clause of its whole baseline (the peers' part
    came from :func:`with_peers`). `specs`: alert type -> how its measure reads."""
    for c in candidates:
        spec = specs.get(str(c["type"]))
        if spec is None or c.get("broker_id") is None:
            continue
        kind, stat = spec.kind, spec.stat
        ev = _evidence(c)
        base: dict[str, Any] = {**(ev.get("baseline") or {}), "kind": kind, "window_s": window.total_seconds()}
        start = _at(ev.get("window_start"), c["ts"])
        signal = ev.get("signal")
        if signal is not None and not rollups.is_empty():
            pick = spec.series(ev)
            mine = rollups.filter((pl.col("cluster") == c["cluster"]) & (pl.col("broker_id") == c["broker_id"])
                                  & (pl.col("signal") == signal) & (pl.col("minute") >= start - window)
                                  & (pl.col("minute") < start) & pick)
            values = _minute_levels(mine, kind, stat, str(ev.get("attribute") or "").lower() == "count")
            base["own_minutes"] = mine.height
            if kind == MeasureKind.EVENTS:
                base["own"] = float(values.sum()) if mine.height else None
            elif values.len() >= HISTORY_MIN_MINUTES:
                low = cfg.for_cluster(str(c["cluster"])).threshold(str(c["type"])).below
                base["own_quantile"] = "p10" if low else "p90"
                base["own"] = float(values.quantile(0.1 if low else 0.9, "nearest") or 0.0)
        text = baseline_text(base)
        if text is None:
            continue
        base["text"] = text
        ev["baseline"] = {k: v for k, v in base.items() if v is not None}
        c["evidence"] = ev
        c["summary"] = f"{c['summary']} [against: {text}]"



REQUEST_RULE_SPECS: dict[str, BaselineSpec] = {
    AlertType.LEADER_AND_ISR_TOTAL_TIME_HIGH.value: BaselineSpec(MeasureKind.MS, "max", request_series),
    AlertType.CONTROL_REQUEST_QUEUE_DELAY.value: BaselineSpec(MeasureKind.MS, "max", request_series),
}
