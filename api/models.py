"""Response models of the REST API (what OpenAPI at /docs shows)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from pipelines.roll_safety import DEFAULT_THRESHOLDS as _TH

__all__ = [
    "AlertPublic",
    "AlertmanagerAlert",
    "AlertmanagerStatus",
    "AlertsPublic",
    "BrokerMetric",
    "BrokerPublic",
    "BrokersPublic",
    "ClusterBroker",
    "ClusterPublic",
    "ControlRequestPublic",
    "ControlRequestsPublic",
    "HealthPublic",
    "MetricPoint",
    "MetricSeries",
    "MetricsPublic",
    "PanelPublic",
    "PartitionLeader",
    "RollDeclaration",
    "RollPublic",
    "RollReason",
    "RollSafetyPublic",
    "RollThresholdsQuery",
    "RollsPublic",
    "TableHealth",
]


class AlertPublic(BaseModel):
    """One alert (gold table `alerts`); `evidence` is the stored JSON, parsed."""

    alert_id: str
    type: str
    severity: str | None = None
    status: str | None = None
    cluster: str
    broker_id: int | None = None
    listener: str | None = None
    started_at: datetime | None = None
    last_seen_at: datetime | None = None
    resolved_at: datetime | None = None
    summary: str | None = None
    evidence: Any = None
    value: float | None = None
    threshold: float | None = None
    updated_at: datetime | None = None
    expected: str | None = Field(default=None, description='"rolling restart": a roll in progress explains it, it '
                                 "is recorded and not paged (pipelines.roll_awareness); null: it pages")
    roll_note: str | None = Field(default=None, description="how a roll bears on it (why expected, or why it pages "
                                  "during a roll); null when no roll covers its start")


class IncidentPublic(BaseModel):
    """One incident (gold table `incidents`): the alerts of one broker in one time span, put down to one cause."""

    incident_id: str
    cluster: str
    broker_id: int | None = None
    cause: str | None = None
    severity: str | None = None
    status: str | None = None
    started_at: datetime | None = None
    last_seen_at: datetime | None = None
    resolved_at: datetime | None = None
    summary: str | None = None
    action: str | None = None
    impact: str | None = None
    baseline: str | None = Field(None, description="its measure against the broker's own history and its peers, and "
                                                   "its cause's earlier incidents")
    alert_types: list[str] = Field(default_factory=list, description="its alerts' types: the symptoms")
    alert_ids: list[str] = Field(default_factory=list)
    alerts: int | None = None
    evidence: Any = None
    updated_at: datetime | None = None


class IncidentsPublic(BaseModel):
    """Incidents, newest `started_at` first; `count` counts every incident matching the filters."""

    data: list[IncidentPublic]
    count: int


class IncidentDetail(IncidentPublic):
    """An incident with its member alerts (the symptoms, each as GET /alerts/{id} shows it)."""

    members: list[AlertPublic] = Field(default_factory=list)


class AlertsPublic(BaseModel):
    """A page of alerts, newest `started_at` first. `count` counts every alert matching the filters."""

    data: list[AlertPublic]
    count: int
    next_cursor: str | None = Field(
        default=None, description="pass as `cursor` for the next page; null on the last page"
    )


class TableHealth(BaseModel):
    name: str
    available: bool
    version: int | None = None
    rows: int | None = None
    last_commit: datetime | None = Field(default=None, description="when the newest Delta commit was written")
    newest_data: datetime | None = Field(
        default=None, description="the newest event time in the table (file statistics)"
    )
    commit_age_s: float | None = None
    data_age_s: float | None = None
    keeping_up: bool = Field(description="a commit happened within stale_after_s")
    error: str | None = None


class HealthPublic(BaseModel):
    status: Literal["ok", "degraded"]
    keeping_up: bool = Field(description="every available table committed within stale_after_s")
    stale_after_s: float
    tables: list[TableHealth]


class BrokerMetric(BaseModel):
    signal: str
    attribute: str | None = None
    listener: str | None = None
    value: float | None = None
    ts: datetime | None = None


class BrokerPublic(BaseModel):
    cluster: str
    broker_id: int
    last_seen: datetime | None = None
    open_alerts: int
    open_alert_types: list[str]
    metrics: list[BrokerMetric]


class BrokersPublic(BaseModel):
    data: list[BrokerPublic]
    count: int
    metrics_source: str | None = Field(
        default=None, description="metric_rollups_1m, metric_samples, or null (no metrics)"
    )
    unavailable: list[str] = Field(default_factory=list, description="tables that could not be read just now")


class ClusterInputPublic(BaseModel):
    """What one cluster sent of one input family (GET /clusters)."""

    last_read: datetime | None = Field(description="when planewatch last read a record of it (newest ingest_ts)")
    records: int = Field(description="records kept in the bronze table")
    last_day: date = Field(description="the newest day (UTC) with records")
    last_day_kinds: dict[str, int] = Field(description="records of that day per log kind or metric format")
    last_day_brokers: list[int] = Field(description="brokers that sent on that day")


class ClusterSummaryPublic(BaseModel):
    cluster: str
    logs: ClusterInputPublic | None = None
    metrics: ClusterInputPublic | None = None
    open_alerts: int
    open_alert_types: dict[str, int]


class ClustersPublic(BaseModel):
    data: list[ClusterSummaryPublic]
    count: int
    unavailable: list[str] = Field(default_factory=list, description="tables that could not be read just now")


class MetricPoint(BaseModel):
    t: datetime
    avg: float | None
    min: float | None
    max: float | None
    last: float | None
    samples: int


class MetricSeries(BaseModel):
    attribute: str | None
    listener: str | None
    points: list[MetricPoint]


class MetricsPublic(BaseModel):
    cluster: str | None
    broker_id: int
    name: str
    since: datetime
    until: datetime
    bucket_seconds: int
    source: str | None = Field(default=None, description="metric_rollups_1m or metric_samples")
    series: list[MetricSeries]


class ControlRequestPublic(BaseModel):
    cluster: str
    broker_id: int | None = None
    controller_id: int | None = None
    controller_epoch: int | None = None
    correlation_id: int | None = None
    request: str | None = None
    sent_ts: datetime | None = None
    handling_ts: datetime | None = None
    finished_ts: datetime | None = None
    end_to_end_ms: float | None = None
    queue_ms: float | None = None
    processing_ms: float | None = None
    lock_wait_ms: float | None = None
    partitions: int | None = None
    status: str | None = None
    controller_queue_ms: float | None = None
    # the broker's request log: where its time went (null without the request log)
    broker_queue_ms: float | None = None
    local_ms: float | None = None
    remote_ms: float | None = None
    response_queue_ms: float | None = None
    response_send_ms: float | None = None
    served_ms: float | None = None
    listener: str | None = None
    witnesses: str | None = None


class ControlRequestsPublic(BaseModel):
    data: list[ControlRequestPublic]
    count: int
    # the oldest request time the page and the count cover: the API's window of recent requests (the last hour),
    # or `since` when it reaches further back (the lake is queried then); null: no request at all
    covers_since: datetime | None = None


class PartitionLeader(BaseModel):
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]


class ClusterBroker(BaseModel):
    id: int
    host: str | None = None
    port: int | None = None
    pid: int | None = None
    listeners: dict[str, str] = Field(default_factory=dict, description="listener name -> host:port")
    control_listener: str | None = None
    prometheus: str | None = None
    live: bool = Field(description="listed by the cluster's metadata just now")


class ClusterPublic(BaseModel):
    bootstrap_servers: str | None
    controller_id: int | None = None
    brokers: list[ClusterBroker]
    partitions: list[PartitionLeader]
    partitions_truncated: bool = False
    metadata_error: str | None = None


class AlertmanagerStatus(BaseModel):
    state: Literal["unprocessed", "active", "suppressed"]
    silencedBy: list[str] = Field(default_factory=list)
    inhibitedBy: list[str] = Field(default_factory=list)


class AlertmanagerAlert(BaseModel):
    """An alert in Alertmanager's API v2 `gettableAlert` shape."""

    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: datetime
    endsAt: datetime
    updatedAt: datetime
    generatorURL: str
    fingerprint: str
    receivers: list[dict[str, str]] = Field(default_factory=list)
    status: AlertmanagerStatus


class PanelPublic(BaseModel):
    """The rows of one dashboard panel's SQL (api/sql/<name>.sql)."""

    name: str
    columns: list[str]
    rows: list[dict[str, Any]]


class RollReason(BaseModel):
    """One check of a roll-safety verdict: what it read, against what, how old the data is."""

    check: str
    status: Literal["ok", "wait", "unsafe", "unknown", "skipped"]
    text: str
    signal: str | None = None
    value: float | None = None
    threshold: float | None = None
    broker_id: int | None = None
    age_s: float | None = None
    partitions: list[str] = Field(default_factory=list, description="the partitions the check is about (the Admin "
                                  "API's per-partition checks), sorted")


class RollSafetyPublic(BaseModel):
    """May the next broker of the cluster be restarted now: `safe`, `wait`, `unsafe` or `unknown` (missing or
    stale data: never `safe`), with every check's reason."""

    cluster: str
    verdict: Literal["safe", "wait", "unsafe", "unknown"]
    as_of: datetime
    mode: str = Field(description="kraft | zookeeper | unknown (no data)")
    nodes: list[int]
    broker_id: int | None = Field(default=None, description="the broker asked about (`broker_id` parameter)")
    reasons: list[RollReason]


class RollThresholdsQuery(BaseModel):
    """The checks' thresholds, each defaulting to pipelines.roll_safety.RollThresholds' value."""

    membership_s: float = Field(default=_TH.membership_s, gt=0, le=86_400)
    stale_after_s: float = Field(default=_TH.stale_after_s, gt=0, le=3_600)
    max_under_replicated: int = Field(default=_TH.max_under_replicated, ge=0)
    max_metadata_lag_ms: float = Field(default=_TH.max_metadata_lag_ms, ge=0)
    max_event_queue_ms: float = Field(default=_TH.max_event_queue_ms, ge=0)
    max_heartbeat_age_ms: float = Field(default=_TH.max_heartbeat_age_ms, ge=0)
    max_preferred_imbalance: int = Field(default=_TH.max_preferred_imbalance, ge=0)
    in_flight_window_s: float = Field(default=_TH.in_flight_window_s, gt=0, le=86_400)


class RollDeclaration(BaseModel):
    """A roll a script declares before it restarts the first node."""

    nodes: list[int] = Field(default_factory=list, max_length=10_000, description="the nodes it will restart")
    roll_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.\-]{1,64}$",
                                description="its own id (a retry with the same id declares nothing new)")


class RollPublic(BaseModel):
    """A roll of a cluster, declared (roll_id set) or seen from its stop lines (pipelines.roll_awareness.Roll)."""

    cluster: str
    roll_id: str | None = None
    started_at: datetime
    last_restart_at: datetime
    ended_at: datetime | None = None
    nodes: list[int]
    pace_s: float = Field(description="median time between its restarts")
    recovery_s: float = Field(description="how long its symptoms are expected for before they page")
    description: str


class RollsPublic(BaseModel):
    """The rolls of a cluster, newest first."""

    data: list[RollPublic]
