"""GET /brokers (latest key metrics and open alerts per broker) and GET /brokers/{broker_id}/metrics."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, Path, Query, Response

from api.deps import MAX_BROKER_ID, NAME_PATTERN, StoreDep, TokenGuard, bad_param, utc
from api.models import BrokerMetric, BrokerPublic, BrokersPublic, MetricPoint, MetricSeries, MetricsPublic
from api.queries import MAX_POINTS, MAX_SERIES, latest_metrics_sql, metric_series_sql, plan_buckets, rows
from api.store import LakeStore, TableUnavailable
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_ROLLUPS_1M, METRIC_SAMPLES

router = APIRouter(tags=["brokers"], dependencies=[TokenGuard])

DEFAULT_WINDOW = timedelta(hours=1)
# A metrics query may span at most this much time (the answer is downsampled, but the scan is not free).
MAX_WINDOW = timedelta(days=31)
DEFAULT_POINTS = 300
SIGNAL_PATTERN = r"^[A-Za-z0-9_.:=,\-]{1,200}$"
# The smallest bucket per source: rollups are per minute; samples keep their own resolution down to 1 s.
MIN_BUCKET_S = {METRIC_ROLLUPS_1M.name: 60, METRIC_SAMPLES.name: 1}
TIME_COLUMN = {METRIC_ROLLUPS_1M.name: "minute", METRIC_SAMPLES.name: "ts"}


def _metrics_source(store: LakeStore) -> tuple[str | None, datetime | None]:
    """The table to read latest metrics from (rollups when they hold data) and its newest time."""
    for name in (METRIC_ROLLUPS_1M.name, METRIC_SAMPLES.name):
        try:
            newest = store.newest(name, TIME_COLUMN[name])
        except TableUnavailable:
            continue
        if newest is not None:
            return name, newest
    return None, None


@router.get("/brokers", response_model=BrokersPublic)
def list_brokers(store: StoreDep, cluster: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None) -> Response:
    """Every broker seen in metrics, alerts or control requests (of `cluster` only, when given), with its latest key
    metrics (within 15 minutes of the newest data) and its open alerts."""
    unavailable: list[str] = []
    snaps: dict[str, pa.Table | None] = {}
    for name in (ALERTS.name, CONTROL_REQUEST_LATENCY.name):
        try:
            snaps[name] = store.snapshot(name)
        except TableUnavailable:
            snaps[name] = None
            unavailable.append(name)
    source, newest = _metrics_source(store)
    latest = None
    if source is not None and newest is not None:
        try:
            latest = store.query(latest_metrics_sql(source, newest), [source])
        except TableUnavailable:
            unavailable.append(source)
    if source is None and {ALERTS.name, CONTROL_REQUEST_LATENCY.name} <= set(unavailable):
        raise TableUnavailable(",".join(unavailable), "no table to list brokers from")
    alerts, crl = snaps[ALERTS.name], snaps[CONTROL_REQUEST_LATENCY.name]

    def answer() -> bytes:
        page = _brokers(alerts, crl, latest, source, unavailable)
        if cluster is not None:
            page.data = [b for b in page.data if b.cluster == cluster]
            page.count = len(page.data)
        return page.model_dump_json().encode()

    content = store.derive(("brokers", source, tuple(unavailable), cluster), (alerts, crl, latest), answer)
    return Response(content=content, media_type="application/json")


def _brokers(
    alerts: pa.Table | None, crl: pa.Table | None, latest: pa.Table | None, source: str | None, unavailable: list[str]
) -> BrokersPublic:
    """The /brokers answer from the alerts and control-request snapshots and the latest-metrics result."""
    brokers: dict[tuple[str, int], dict[str, Any]] = {}

    def broker(cluster: str, broker_id: int) -> dict[str, Any]:
        return brokers.setdefault(
            (cluster, broker_id),
            {"cluster": cluster, "broker_id": broker_id, "last_seen": None, "types": [], "metrics": []},
        )

    if alerts is not None:
        open_ = alerts.filter(pc.fill_null(pc.equal(alerts["status"], "open"), False))
        for r in open_.select(["cluster", "broker_id", "type"]).to_pylist():
            if r["broker_id"] is not None:
                broker(r["cluster"], r["broker_id"])["types"].append(r["type"])
    if crl is not None:
        pairs = crl.select(["cluster", "broker_id"]).group_by(["cluster", "broker_id"]).aggregate([])
        for r in pairs.to_pylist():
            if r["broker_id"] is not None:
                broker(r["cluster"], r["broker_id"])
    for r in rows(latest) if latest is not None else []:
        b = broker(r["cluster"], r["broker_id"])
        b["metrics"].append(BrokerMetric(**{k: r[k] for k in ("signal", "attribute", "listener", "value")}, ts=r["ts"]))
        if r["ts"] is not None and (b["last_seen"] is None or r["ts"] > b["last_seen"]):
            b["last_seen"] = r["ts"]
    data = [
        BrokerPublic(
            cluster=b["cluster"],
            broker_id=b["broker_id"],
            last_seen=b["last_seen"],
            open_alerts=len(b["types"]),
            open_alert_types=sorted(set(b["types"])),
            metrics=sorted(b["metrics"], key=lambda m: (m.signal, m.attribute or "", m.listener or "")),
        )
        for _, b in sorted(brokers.items())
    ]
    return BrokersPublic(data=data, count=len(data), metrics_source=source, unavailable=unavailable)


def _series(result: pa.Table) -> list[MetricSeries]:
    grouped: dict[tuple[str | None, str | None], list[MetricPoint]] = defaultdict(list)
    for r in rows(result):
        key = (r["attribute"], r["listener"])
        if key not in grouped and len(grouped) >= MAX_SERIES:
            continue
        if len(grouped[key]) < MAX_POINTS:
            grouped[key].append(
                MetricPoint(
                    t=r["t"], avg=r["avg"], min=r["min"], max=r["max"], last=r["last"], samples=int(r["samples"] or 0)
                )
            )
    return [MetricSeries(attribute=a, listener=lst, points=p) for (a, lst), p in grouped.items()]


@router.get(
    "/brokers/{broker_id}/metrics",
    response_model=MetricsPublic,
    responses={503: {"description": "no metrics table readable"}},
)
def broker_metrics(
    store: StoreDep,
    broker_id: Annotated[int, Path(ge=0, le=MAX_BROKER_ID)],
    name: Annotated[str, Query(pattern=SIGNAL_PATTERN, description="signal, e.g. RequestQueueSize")],
    since: Annotated[datetime | None, Query(description="default: until - 1 hour")] = None,
    until: Annotated[datetime | None, Query(description="default: now, to the next whole second")] = None,
    cluster: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    points: Annotated[int, Query(ge=1, description=f"points per series, capped at {MAX_POINTS}")] = DEFAULT_POINTS,
) -> Response:
    """A time series of one signal for one broker, one series per (attribute, listener), downsampled in
    DataFusion to at most `points` buckets (avg/min/max/last/samples per bucket). Reads metric_rollups_1m when it
    holds data for the window, else metric_samples (pruned by the cluster/date partitions and ts statistics)."""
    since, until = utc(since, "since"), utc(until, "until")
    if until is None:
        until = _now_to_the_second() if since is None else since + DEFAULT_WINDOW
    if since is None:
        since = until - DEFAULT_WINDOW
    if until <= since:
        bad_param("until", "until must be after since", str(until))
    if until - since > MAX_WINDOW:
        bad_param("since", f"the window may span at most {MAX_WINDOW.days} days", str(since))
    points = min(points, MAX_POINTS)
    empty: bytes | None = None
    error: TableUnavailable | None = None
    for table in (METRIC_ROLLUPS_1M.name, METRIC_SAMPLES.name):
        bucket = plan_buckets(since, until, points, MIN_BUCKET_S[table])
        sql = metric_series_sql(
            table, cluster=cluster, broker_id=broker_id, signal=name, since=since, until=until, bucket_s=bucket
        )
        try:
            result = store.query(sql, [table])
        except TableUnavailable as e:
            error = e
            continue
        answer = MetricsPublic(
            cluster=cluster, broker_id=broker_id, name=name, since=since, until=until, bucket_seconds=bucket,
            source=table, series=[],
        )
        content = store.derive(("metrics", sql), (result,), partial(_metrics_json, answer, result))
        if result.num_rows:
            return Response(content=content, media_type="application/json")
        empty = empty or content
    if empty is not None:  # readable, but no data in the window: an empty answer, not an error
        return Response(content=empty, media_type="application/json")
    assert error is not None
    raise error


def _metrics_json(answer: MetricsPublic, result: pa.Table) -> bytes:
    return answer.model_copy(update={"series": _series(result)}).model_dump_json().encode()


def _now_to_the_second() -> datetime:
    """Now, rounded up to the whole second: requests of the same second build the same SQL, so they share one
    query and one answer (api.memo) instead of each running DataFusion; nothing is newer than now, and `until`
    is exclusive, so the answer is the same."""
    now = datetime.now(UTC)
    return now.replace(microsecond=0) + timedelta(seconds=1) if now.microsecond else now
