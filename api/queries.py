"""Pure query logic: filters over Arrow snapshots, the opaque alert cursor, and the SQL the service builds.

No I/O here: functions take pyarrow Tables / validated values and return Tables, rows or SQL text. Every value
put into SQL is validated first (identifiers against a pattern, numbers as ints, times formatted by us), so no
request text ever reaches DataFusion as SQL.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from schemas.signals import Signal

__all__ = [
    "KEY_SIGNALS",
    "MAX_POINTS",
    "AlertFilter",
    "CursorError",
    "control_requests_sql",
    "decode_cursor",
    "encode_cursor",
    "filter_alerts",
    "filter_control_requests",
    "latest_metrics_sql",
    "lit_date",
    "lit_ts",
    "metric_series_sql",
    "name_literal",
    "parse_evidence",
    "plan_buckets",
    "rows",
]

# Signals /brokers reports per broker (FACTS.md section 3 names).
KEY_SIGNALS: tuple[str, ...] = tuple(s.value for s in (
    Signal.RequestQueueSize,
    Signal.ControlPlaneRequestQueueSize,
    Signal.NetworkProcessorAvgIdlePercent,
    Signal.ControlPlaneNetworkProcessorAvgIdlePercent,
    Signal.RequestHandlerAvgIdlePercent,
    Signal.ControlPlaneRequestHandlerAvgIdlePercent,
    Signal.AcceptorBlockedPercent,
    Signal.ControlPlaneAcceptorBlockedPercent,
))
# Points per series a metrics answer may hold: a chart is at most ~1000 px wide, so more points add nothing.
MAX_POINTS = 1000
# Series (attribute x listener) per metrics answer.
MAX_SERIES = 20
# /brokers looks this far back from a table's newest data for the "latest" value of each signal.
LATEST_LOOKBACK = timedelta(minutes=15)
# Names that may appear inside SQL: metric signal / cluster names as Kafka and our pipeline spell them.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:=,\-]{1,200}$")
_CURSOR_VERSION = 1


class CursorError(ValueError):
    """The cursor is not one this service issued."""


# -- alerts ----------------------------------------------------------------------------------------------------


def encode_cursor(started_at: datetime | None, alert_id: str) -> str:
    """An opaque cursor for keyset pagination on (started_at, alert_id), newest first."""
    us = _to_us(started_at)
    raw = json.dumps([_CURSOR_VERSION, us, alert_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    """(started_at in microseconds, alert_id) of a cursor; raises CursorError."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        v, us, alert_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as e:
        raise CursorError("not a cursor issued by this service") from e
    if v != _CURSOR_VERSION or not isinstance(us, int) or not isinstance(alert_id, str):
        raise CursorError("not a cursor issued by this service")
    return us, alert_id


@dataclass(frozen=True)
class AlertFilter:
    """Validated filters of GET /alerts."""

    status: str | None = None
    type: str | None = None
    cluster: str | None = None
    broker_id: int | None = None
    severity: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def _to_us(t: datetime | None) -> int:
    if t is None:
        return 0
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1_000_000)


def _ts_scalar(t: datetime) -> pa.Scalar:
    return pa.scalar(_to_us(t), pa.timestamp("us", tz="UTC"))


def _eq(t: pa.Table, col: str, value: Any) -> pa.ChunkedArray:
    return pc.fill_null(pc.equal(t[col], pa.scalar(value, t.schema.field(col).type)), False)


def _and(mask: Any, m: Any) -> Any:
    return m if mask is None else pc.and_(mask, m)


def _ts_col(t: pa.Table, col: str) -> pa.ChunkedArray:
    return pc.cast(t[col], pa.timestamp("us", tz="UTC"))


def filter_alerts(
    snapshot: pa.Table, f: AlertFilter, cursor: tuple[int, str] | None, limit: int
) -> tuple[pa.Table, int, str | None]:
    """One page of alerts from a snapshot sorted by (started_at desc, alert_id desc).

    `since`/`until` select alerts active in the window: last seen (or started) at/after `since`, started
    before `until`. Returns (page, number of alerts matching the filters, next cursor or None).
    """
    t = snapshot
    if t.num_rows == 0:
        return t, 0, None
    mask: Any = None
    for col, val in (
        ("status", f.status),
        ("type", f.type),
        ("cluster", f.cluster),
        ("broker_id", f.broker_id),
        ("severity", f.severity),
    ):
        if val is not None:
            mask = _and(mask, _eq(t, col, val))
    started = _ts_col(t, "started_at")
    if f.since is not None:
        seen = pc.coalesce(_ts_col(t, "last_seen_at"), started)
        mask = _and(mask, pc.fill_null(pc.greater_equal(seen, _ts_scalar(f.since)), False))
    if f.until is not None:
        mask = _and(mask, pc.fill_null(pc.less(started, _ts_scalar(f.until)), False))
    count = t.num_rows if mask is None else int(pc.sum(mask).as_py() or 0)
    if cursor is not None:
        us, alert_id = cursor
        s = pc.fill_null(started, pa.scalar(0, pa.timestamp("us", tz="UTC")))
        cs = pa.scalar(us, pa.timestamp("us", tz="UTC"))
        before = pc.or_(
            pc.less(s, cs), pc.and_(pc.equal(s, cs), pc.less(t["alert_id"], pa.scalar(alert_id, pa.string())))
        )
        mask = _and(mask, before)
    if mask is None:
        page, more = t.slice(0, limit), t.num_rows > limit
    else:
        idx = pc.indices_nonzero(mask)
        page, more = t.take(idx.slice(0, limit)), len(idx) > limit
    next_cursor = None
    if more and page.num_rows:
        last = page.slice(page.num_rows - 1, 1).to_pylist()[0]
        next_cursor = encode_cursor(last["started_at"], last["alert_id"])
    return page, count, next_cursor


def parse_evidence(text: Any) -> Any:
    """The alert's evidence JSON parsed; text that is not JSON is returned as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- control requests ------------------------------------------------------------------------------------------


def filter_control_requests(
    snapshot: pa.Table,
    *,
    cluster: str | None,
    broker_id: int | None,
    request: str | None,
    status: str | None,
    min_latency_ms: float | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> tuple[pa.Table, int]:
    """The newest `limit` control requests matching the filters (snapshot sorted by sent_ts desc), and the count."""
    t = snapshot
    if t.num_rows == 0:
        return t, 0
    mask: Any = None
    for col, val in (("cluster", cluster), ("broker_id", broker_id), ("request", request), ("status", status)):
        if val is not None:
            mask = _and(mask, _eq(t, col, val))
    if min_latency_ms is not None:
        mask = _and(mask, pc.fill_null(pc.greater_equal(t["end_to_end_ms"], float(min_latency_ms)), False))
    when = pc.coalesce(_ts_col(t, "sent_ts"), _ts_col(t, "handling_ts"))
    if since is not None:
        mask = _and(mask, pc.fill_null(pc.greater_equal(when, _ts_scalar(since)), False))
    if until is not None:
        mask = _and(mask, pc.fill_null(pc.less(when, _ts_scalar(until)), False))
    if mask is None:
        return t.slice(0, limit), t.num_rows
    idx = pc.indices_nonzero(mask)
    return t.take(idx.slice(0, limit)), len(idx)


def control_requests_sql(
    table: str,
    *,
    cluster: str | None,
    broker_id: int | None,
    request: str | None,
    status: str | None,
    min_latency_ms: float | None,
    since: datetime,
    until: datetime | None,
    limit: int,
) -> tuple[str, str]:
    """DataFusion SQL of `filter_control_requests` over the lake (a `since` older than the snapshot's window):
    the page (same order as the snapshot) and the count. `date` (a partition column) bounds the files read."""
    when = "coalesce(sent_ts, handling_ts)"
    where = [f"date >= {lit_date(since.astimezone(UTC).date())}", f"{when} >= {lit_ts(since)}"]
    if until is not None:
        where += [f"date <= {lit_date(until.astimezone(UTC).date())}", f"{when} < {lit_ts(until)}"]
    for col, val in (("cluster", cluster), ("request", request), ("status", status)):
        if val is not None:
            where.append(f'"{col}" = {name_literal(val)}')
    if broker_id is not None:
        where.append(f"broker_id = {int(broker_id)}")
    if min_latency_ms is not None:
        where.append(f"end_to_end_ms >= {float(min_latency_ms)!r}")
    cond = " AND ".join(where)
    return (
        f"SELECT * FROM {table} WHERE {cond} ORDER BY sent_ts DESC NULLS LAST, broker_id ASC LIMIT {int(limit)}",
        f"SELECT count(*) AS n FROM {table} WHERE {cond}",
    )


# -- metrics SQL -----------------------------------------------------------------------------------------------


def plan_buckets(since: datetime, until: datetime, points: int, min_bucket_s: int) -> int:
    """Bucket width in seconds so that [since, until) holds at most `points` buckets (never below min_bucket_s)."""
    span = max(1.0, (until - since).total_seconds())
    return max(min_bucket_s, math.ceil(span / max(1, points)))


def lit_ts(t: datetime) -> str:
    t = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return f"TIMESTAMP '{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'"


def lit_date(d: date) -> str:
    return f"DATE '{d.isoformat()}'"


def name_literal(s: str) -> str:
    """A SQL string literal of a name that matches SAFE_NAME (ValueError otherwise: nothing to escape)."""
    if not SAFE_NAME.match(s):
        raise ValueError(f"not a safe name: {s!r}")
    return "'" + s + "'"


def _date_range(since: datetime, until: datetime) -> tuple[date, date]:
    return since.astimezone(UTC).date(), until.astimezone(UTC).date()


def metric_series_sql(
    table: str,
    *,
    cluster: str | None,
    broker_id: int,
    signal: str,
    since: datetime,
    until: datetime,
    bucket_s: int,
) -> str:
    """DataFusion SQL: one row per (attribute, listener, bucket) of `signal` for one broker.

    `date` (a partition column) bounds the files read; `ts`/`minute` statistics prune the rest. Rollups combine
    per-minute avg weighted by their sample counts.
    """
    d0, d1 = _date_range(since, until)
    where = [f"broker_id = {int(broker_id)}", f"signal = {name_literal(signal)}"]
    if cluster is not None:
        where.append(f'"cluster" = {name_literal(cluster)}')
    where.append(f"date >= {lit_date(d0)} AND date <= {lit_date(d1)}")
    bucket = f"INTERVAL '{int(bucket_s)} seconds'"
    origin = "TIMESTAMP '1970-01-01T00:00:00Z'"
    if table == "metric_rollups_1m":
        tcol = "minute"
        aggs = (
            "sum(avg * samples) / nullif(sum(samples), 0) AS avg, min(min) AS min, max(max) AS max, "
            "last_value(last ORDER BY minute) AS last, sum(samples) AS samples"
        )
    else:
        tcol = "ts"
        aggs = (
            "avg(value) AS avg, min(value) AS min, max(value) AS max, "
            "last_value(value ORDER BY ts) AS last, count(*) AS samples"
        )
    where.append(f"{tcol} >= {lit_ts(since)} AND {tcol} < {lit_ts(until)}")
    return (
        f"SELECT attribute, listener, date_bin({bucket}, {tcol}, {origin}) AS t, {aggs} "
        f"FROM {table} WHERE {' AND '.join(where)} "
        f"GROUP BY attribute, listener, t ORDER BY attribute, listener, t "
        f"LIMIT {MAX_POINTS * MAX_SERIES}"
    )


def latest_metrics_sql(table: str, newest: datetime, signals: Sequence[str] = KEY_SIGNALS) -> str:
    """DataFusion SQL: the latest value of each key signal per (cluster, broker, attribute, listener)."""
    since = newest - LATEST_LOOKBACK
    tcol, vcol = ("minute", "last") if table == "metric_rollups_1m" else ("ts", "value")
    d0 = since.astimezone(UTC).date()
    names = ", ".join(name_literal(s) for s in signals)
    return (
        'SELECT "cluster", broker_id, signal, attribute, listener, '
        f"last_value({vcol} ORDER BY {tcol}) AS value, max({tcol}) AS ts "
        f"FROM {table} WHERE date >= {lit_date(d0)} AND {tcol} >= {lit_ts(since)} "
        f"AND signal IN ({names}) AND broker_id >= 0 "  # -1: a controller process, not a broker
        'GROUP BY "cluster", broker_id, signal, attribute, listener'
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _column_values(col: Any, type_: pa.DataType) -> list[Any]:
    if pa.types.is_timestamp(type_):
        factor = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0}[type_.unit]
        ints = pc.cast(col, pa.int64()).to_pylist()
        if factor == 0:  # nanoseconds: microsecond precision is what the API shows
            return [None if v is None else _EPOCH + timedelta(microseconds=v // 1000) for v in ints]
        return [None if v is None else _EPOCH + timedelta(microseconds=v * factor) for v in ints]
    values: list[Any] = col.to_pylist()
    return values


def rows(t: pa.Table) -> list[dict[str, Any]]:
    """Python rows of a (small) result, timestamps as UTC datetimes.

    Built column by column: pyarrow makes tz-aware datetimes through zoneinfo (~4 us each) and row dicts one
    cell at a time; integers plus a timedelta from the epoch are several times faster, which matters for
    100-row pages at hundreds of requests per second.
    """
    names = t.column_names
    columns = [_column_values(t[n], t.schema.field(n).type) for n in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
