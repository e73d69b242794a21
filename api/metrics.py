"""The API's own metrics for the operator's Prometheus (prometheus_client), served by GET /metrics (api.routes.metrics)
behind the same bearer-token rule as every data endpoint.

Each metric (its type; its labels): what it says, and where it comes from:

* `planewatch_api_requests_total` (counter; method, route, status): every HTTP request, counted by
  :class:`RequestMetrics` (an ASGI middleware) under its route's template (`/alerts/{alert_id}`, not the id; a path
  no route matches is `unmatched`), so the series stay as few as the routes;
* `planewatch_api_request_duration_seconds` (histogram; method, route, status): ... its time to the response's
  end;
* `planewatch_open_incidents` (gauge; cluster, cause): the lake's open incidents (`incidents`, through the store's
  DataFusion query, as GET /incidents reads);
* `planewatch_open_alerts` (gauge; cluster, type): the lake's open alerts (`alerts`, the store's snapshot, as
  GET /alerts reads);
* `planewatch_api_table_readable` (gauge; table): 1 when the table behind those gauges read, 0 when it did not (its
  gauges are then left out rather than shown as 0).

The lake's gauges are read at a scrape at most every :data:`LAKE_TTL_S` (:class:`LakeGauges`), so a scrape every
15 s costs one read per table, and a dashboard of Prometheus panels asking at once costs no more. The counting
functions (:func:`open_alerts`, :func:`open_incidents_sql`) are pure and tested without HTTP.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.store import LakeStore, TableMissing, TableUnavailable
from schemas.tables import ALERTS, INCIDENTS

__all__ = ["CONTENT_TYPE", "LAKE_TTL_S", "ApiMetrics", "LakeCounts", "LakeGauges", "RequestMetrics", "open_alerts",
           "open_incidents_sql"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
# The lake's gauges are read again at most this often: a few seconds behind the lake (the pipeline commits every
# 2-10 s), one read per table for a Prometheus scraping every 15 s, whatever else scrapes.
LAKE_TTL_S = 5.0
# Request durations: a cached answer takes about a millisecond, a DataFusion query tens to hundreds, and a query is
# abandoned at query_timeout_s (10 s by default).
DURATION_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# The route label of a request no route matched (a 404 for any path: one series, not one per path).
UNMATCHED = "unmatched"
OPEN = "open"


def open_alerts(alerts: pa.Table) -> dict[tuple[str, str], int]:
    """(cluster, type) -> open alerts, of an `alerts` snapshot."""
    opened = alerts.filter(pc.fill_null(pc.equal(alerts["status"], OPEN), False)).select(["cluster", "type"])
    counts = opened.group_by(["cluster", "type"]).aggregate([([], "count_all")])
    return {(str(c), str(t)): int(n) for c, t, n in zip(counts["cluster"].to_pylist(), counts["type"].to_pylist(),
                                                         counts["count_all"].to_pylist(), strict=True)}


def open_incidents_sql() -> str:
    """DataFusion SQL: the open incidents per cluster and cause."""
    return (f"SELECT \"cluster\", cause, count(*) AS n FROM {INCIDENTS.name} WHERE status = '{OPEN}' "
            "GROUP BY \"cluster\", cause")


@dataclass(frozen=True)
class LakeCounts:
    """One reading of the lake's gauges; a table that did not read has no counts and is in `unreadable`."""

    incidents: Mapping[tuple[str, str], int] = field(default_factory=dict)
    alerts: Mapping[tuple[str, str], int] = field(default_factory=dict)
    unreadable: frozenset[str] = frozenset()


def read_lake(store: LakeStore) -> LakeCounts:
    """The open incidents and alerts as the store reads them now (a lake without `incidents` has none)."""
    unreadable: set[str] = set()
    incidents: dict[tuple[str, str], int] = {}
    alerts: dict[tuple[str, str], int] = {}
    try:
        result = store.query(open_incidents_sql(), [INCIDENTS.name])
        incidents = {(str(r["cluster"]), str(r["cause"])): int(r["n"]) for r in result.to_pylist()}
    except TableMissing:
        pass
    except TableUnavailable:
        unreadable.add(INCIDENTS.name)
    try:
        alerts = store.memo(ALERTS.name, ("metrics", "open by cluster and type"), open_alerts)
    except TableUnavailable:
        unreadable.add(ALERTS.name)
    return LakeCounts(incidents, alerts, frozenset(unreadable))


class LakeGauges(Collector):
    """The lake's gauges of the last reading, read again (:meth:`refresh`) once it is LAKE_TTL_S old."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl_s: float = LAKE_TTL_S) -> None:
        self.clock = clock
        self.ttl_s = ttl_s
        self.reads = 0
        self._counts: LakeCounts | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def refresh(self, store: LakeStore) -> None:
        """Read the lake unless the last reading is younger than the TTL (one reader at a time; the others wait for
        its reading)."""
        with self._lock:
            if self._counts is not None and self.clock() - self._read_at < self.ttl_s:
                return
            self._counts = read_lake(store)
            self._read_at = self.clock()
            self.reads += 1

    def describe(self) -> Iterable[Metric]:
        return self._families(LakeCounts())

    def collect(self) -> Iterable[Metric]:
        return self._families(self._counts or LakeCounts())

    def _families(self, counts: LakeCounts) -> list[Metric]:
        incidents = GaugeMetricFamily("planewatch_open_incidents", "Open incidents in the lake, by cluster and cause",
                                      labels=["cluster", "cause"])
        for (cluster, cause), n in sorted(counts.incidents.items()):
            incidents.add_metric([cluster, cause], n)
        alerts = GaugeMetricFamily("planewatch_open_alerts", "Open alerts in the lake, by cluster and type",
                                   labels=["cluster", "type"])
        for (cluster, type_), n in sorted(counts.alerts.items()):
            alerts.add_metric([cluster, type_], n)
        readable = GaugeMetricFamily("planewatch_api_table_readable", "1 when the table behind the open incidents "
                                     "or alerts read at the last scrape", labels=["table"])
        if self._counts is not None:
            for table in (INCIDENTS.name, ALERTS.name):
                readable.add_metric([table], 0.0 if table in counts.unreadable else 1.0)
        return [incidents, alerts, readable]


class ApiMetrics:
    """The API's metrics in a registry of their own (one per application)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = CollectorRegistry()
        labels = ("method", "route", "status")
        self.requests = Counter("planewatch_api_requests", "HTTP requests answered, by route template and status",
                                labels, registry=self.registry)
        self.durations = Histogram("planewatch_api_request_duration_seconds", "Time to answer an HTTP request",
                                   labels, registry=self.registry, buckets=DURATION_BUCKETS_S)
        self.lake = LakeGauges(clock)
        self.registry.register(self.lake)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.durations.labels(method, route, str(status)).observe(seconds)

    def exposition(self, store: LakeStore) -> bytes:
        """Every metric in the text format, the lake's gauges read first if their reading is older than the TTL."""
        self.lake.refresh(store)
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware: each HTTP request counted and timed under its route's template (see the module docstring)."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what the client sees when the app raises before it answers

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", UNMATCHED)  # the router sets the matched route on the scope
            self.metrics.observe(scope["method"], str(route), status, time.perf_counter() - start)
