"""The roll-safety verdict read from the lake: the SQL over metric_samples, control_request_latency and alerts that
feeds :func:`pipelines.roll_safety.roll_verdict`, with the cluster's own description through the Admin API when a
connection is configured for it (:mod:`api.kafka_admin`) (the API's GET /clusters/{cluster}/roll-safety and
`planewatch roll-check` both call :func:`cluster_verdict`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import polars as pl

from api.kafka_admin import AdminUnavailable, describe_cluster
from api.queries import lit_date, lit_ts, name_literal
from api.store import LakeStore, TableMissing
from pipelines.restart_probe import admin_reasons
from pipelines.roll_safety import (
    CONTROL_REQUEST_ALERTS,
    DEFAULT_THRESHOLDS,
    ROLL_SIGNALS,
    Reason,
    RollThresholds,
    Verdict,
    roll_verdict,
    utc_frame,
    worst,
)
from schemas.roll_safety import CheckStatus, RollCheck
from schemas.signals import PER_BROKER_SIGNALS, SUBJECT_LABEL
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_SAMPLES

__all__ = ["admin_verdict", "cluster_verdict", "described", "lake_frame", "verdict_json"]

def _latest_sql(cluster: str, now: dt.datetime, th: RollThresholds) -> str:
    since = now - dt.timedelta(seconds=th.membership_s)
    names = ", ".join(name_literal(s) for s in ROLL_SIGNALS)
    per_broker = ", ".join(name_literal(s) for s in PER_BROKER_SIGNALS)
    subject = (f"CASE WHEN signal IN ({per_broker}) THEN TRY_CAST(labels[{name_literal(SUBJECT_LABEL)}] AS INT) "
               "END")
    return (
        f"SELECT broker_id, signal, attribute, {subject} AS subject, last_value(value ORDER BY ts) AS value, "
        f"max(ts) AS ts FROM {METRIC_SAMPLES.name} WHERE \"cluster\" = {name_literal(cluster)} "
        f"AND date >= {lit_date(since.date())} AND date <= {lit_date(now.date())} "
        f"AND ts >= {lit_ts(since)} AND ts <= {lit_ts(now)} AND signal IN ({names}) AND broker_id IS NOT NULL "
        f"GROUP BY broker_id, signal, attribute, {subject}"
    )


def _requests_sql(cluster: str, now: dt.datetime, th: RollThresholds) -> str:
    since = now - dt.timedelta(seconds=th.in_flight_window_s)
    return (
        f"SELECT broker_id, request, sent_ts, finished_ts, status FROM {CONTROL_REQUEST_LATENCY.name} "
        f"WHERE \"cluster\" = {name_literal(cluster)} AND date >= {lit_date(since.date())} "
        f"AND sent_ts >= {lit_ts(since)} AND sent_ts <= {lit_ts(now)}"
    )


def _alerts_sql(cluster: str, now: dt.datetime) -> str:
    types = ", ".join(name_literal(t) for t in CONTROL_REQUEST_ALERTS)
    return (
        f"SELECT type, broker_id, started_at, resolved_at FROM {ALERTS.name} "
        f"WHERE \"cluster\" = {name_literal(cluster)} AND type IN ({types}) AND started_at <= {lit_ts(now)} "
        f"AND (resolved_at IS NULL OR resolved_at > {lit_ts(now)})"
    )


def lake_frame(store: LakeStore, sql: str, table: str, schema: dict[str, Any]) -> pl.DataFrame:
    """The query's rows as polars with UTC timestamps; an empty frame of `schema` when the table does not exist
    yet (a lake whose pipeline has not written it)."""
    try:
        got = store.query(sql, [table])
    except TableMissing:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame(schema=schema) if got.num_rows == 0 else utc_frame(got)


_TS = pl.Datetime("us", "UTC")


def described(cluster: str, admin: Mapping[str, Mapping[str, str]] | None, node: int | None,
              restarted: int | None = None) -> list[Reason]:
    """The reasons of `cluster`'s own description through the Admin API (pipelines.restart_probe) for `node` and
    the node `restarted` last, when `admin` (cluster -> librdkafka properties) has a connection for it; a skipped
    ADMIN_API reason otherwise."""
    props = (admin or {}).get(cluster)
    if props is None:
        return [Reason(RollCheck.ADMIN_API, CheckStatus.skipped, f"no Admin API connection configured for "
                       f"{cluster!r}: the per-partition and quorum checks are not made", "Admin API")]
    try:
        return admin_reasons(describe_cluster(props), None, node, restarted)
    except AdminUnavailable as e:
        return admin_reasons(None, str(e), node, restarted)


def admin_verdict(cluster: str, props: Mapping[str, str], now: dt.datetime, node: int | None = None,
                  restarted: int | None = None) -> Verdict:
    """The verdict from the cluster's own description alone (no lake: `planewatch roll` without --lake)."""
    reasons = described(cluster, {cluster: props}, node, restarted)
    return Verdict(cluster, worst(r.status for r in reasons), now, "admin", [], reasons, node)


def cluster_verdict(store: LakeStore, cluster: str, now: dt.datetime, th: RollThresholds = DEFAULT_THRESHOLDS,
                    broker_id: int | None = None, since: dt.datetime | None = None,
                    admin: Mapping[str, Mapping[str, str]] | None = None, restarted: int | None = None) -> Verdict:
    """The verdict of `cluster` as of `now` from the lake behind `store`, and from the cluster itself through the
    Admin API when `admin` has a connection for it (:func:`described`).

    Raises:
        TableUnavailable: a table exists but cannot be read (a missing table reads as no rows).
    """
    latest = lake_frame(store, _latest_sql(cluster, now, th), METRIC_SAMPLES.name,
                    {"broker_id": pl.Int32, "signal": pl.String, "attribute": pl.String, "subject": pl.Int32,
                     "value": pl.Float64, "ts": _TS})
    requests = lake_frame(store, _requests_sql(cluster, now, th), CONTROL_REQUEST_LATENCY.name,
                      {"broker_id": pl.Int32, "request": pl.String, "sent_ts": _TS, "finished_ts": _TS,
                       "status": pl.String})
    alerts = lake_frame(store, _alerts_sql(cluster, now), ALERTS.name,
                    {"type": pl.String, "broker_id": pl.Int32, "started_at": _TS, "resolved_at": _TS})
    return roll_verdict(cluster, latest, requests, alerts, now, th, broker_id, since,
                        described(cluster, admin, broker_id, restarted))


def verdict_json(v: Verdict) -> dict[str, Any]:
    """A verdict as JSON-ready data (enums as their strings)."""
    out = asdict(v)
    out["verdict"] = v.verdict.value
    out["reasons"] = [{**asdict(r), "check": r.check.value, "status": r.status.value} for r in v.reasons]
    return out
