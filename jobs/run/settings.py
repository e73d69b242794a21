"""Typed pipeline settings from `conf/pipeline.yaml`, validated on load; command-line flags override the file.

Every error names the key (`sources.files.max_bytes_per_batch: expected a positive integer, got -1`) and the file.
The `detection:` section is opaque here: it is handed as a mapping to `pipelines.detection` (which validates it).
"""

# Over 500 lines: every pipeline key's default and validation in one place: docs/configuration.md is generated from it.
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from jobs import PipelineIOError
from jobs.sources.envelopes import MappingError, MappingRule, rules_from_config
from jobs.sources.kafka_security import PROTOCOLS, PYTHON_READER_ONLY, SASL_MECHANISMS, KafkaSecurity
from jobs.sources.prometheus_query import (
    DEFAULT_CATCH_UP_S,
    DEFAULT_MATCH,
    DEFAULT_MAX_WINDOW_S,
    QUERY_TIMEOUT_S,
    LabelError,
    LabelRule,
    ServerAuth,
    label_rules,
)
from schemas.inputs import Envelope

__all__ = [
    "DEFAULT_CONFIG",
    "KAFKA_READERS",
    "SINK_MODES",
    "FileSourceSettings",
    "KafkaSourceSettings",
    "ObservabilitySettings",
    "PrometheusSourceSettings",
    "PrometheusTarget",
    "QualitySettings",
    "Settings",
    "SettingsError",
    "add_arguments",
    "interval_seconds",
    "load_settings",
]

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "conf" / "pipeline.yaml"
# The log and pairing queries' micro-batch interval: a Finished line's alert is readable about two of them and
# their batches later (the soak at 30 brokers, every query at 2 s: median 5.1 s, 1.15 cores; at 10 s: 16-17 s).
DEFAULT_TRIGGER = "2 seconds"
_INTERVAL = re.compile(r"^\d+(\.\d+)?\s*(millisecond|second|minute|hour)s?$")
_CLUSTER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_URL = re.compile(r"^https?://[^/\s]+(/\S*)?$")
_UNIT_S = {"millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0}
# sink.mode: who writes the Delta tables (lake.sink); delta-spark needs its jar (jobs.run.jars).
SINK_MODES = ("delta-rs", "delta-spark")
# sources.kafka.reader: Spark's own `kafka` source (spark-sql-kafka jar), the Python data source `planewatch_kafka`
# (confluent-kafka), or auto: Spark's where its jar is loaded. The default is planewatch_kafka: it read the same
# records ~20% faster than Spark's source here (benchmarks.sinks_and_sources; README, "Sinks and Kafka readers").
KAFKA_READERS = ("auto", "spark", "python")
# rsyslog re-sends at most its unpersisted lines (planewatch.kafka.shipper.PERSIST_STATE_LINES) when it restarts, and
# an agent restarted by systemd or Kubernetes is back within a minute or two; a logging cluster down for minutes holds
# the shipper's queue, not its duplicates. 15 minutes covers both with margin and keeps one key per record of those
# minutes (a fleet of 40k lines/s: 36M keys, on disk in RocksDB).
DEFAULT_DEDUP_HORIZON = "15 minutes"
DEFAULT_KAFKA_READER = "python"


class SettingsError(PipelineIOError):
    """The pipeline configuration is invalid; the message names the key."""


# A growing file's last line without a newline is read once the file has not changed for this many seconds
# (sources.files.tail_quiet_s). Kafka's log4j appenders write each event whole and flush it (immediateFlush), so a
# partial line that stays for seconds belongs to a writer that stopped; the margin covers block-buffered writers
# and slow file systems. A line completed after it was read this way continues as a record of its own.
DEFAULT_TAIL_QUIET_S = 30.0
# A log query whose files hold nothing new still runs a batch this often (sources.files.idle_batch_s): the pairing's
# event time moves on the metric family's samples, so a control request stuck on a quiet broker (KAFKA-6974: its
# handler blocked, its log silent) is reported in flight, within this long of its alert level (5 s by default).
DEFAULT_IDLE_BATCH_S = 5.0

# What the file source does with a finished input file (a scrape answer, a rotated log) once a committed batch read it
# to its end: keep it, or delete it (delete: the tree and the source's offsets then hold only what is unread,
# as Spark's file source's cleanSource).
CLEAN_FINISHED = ("keep", "delete")


@dataclass(frozen=True)
class FileSourceSettings:
    """`sources.files`: a directory tree of log and metric files (growing and rotated files included)."""

    enabled: bool = True
    path: str = "var/input"
    max_bytes_per_batch: int = 64 * 1024 * 1024
    # a growing file's last line without a newline is read once the file has not changed for this many seconds
    # (DEFAULT_TAIL_QUIET_S gives the reason of the default)
    tail_quiet_s: float = DEFAULT_TAIL_QUIET_S
    # keep | delete (CLEAN_FINISHED gives the reason)
    clean_finished: str = "keep"
    # the log query runs a batch this often when its files hold nothing new (0: never; DEFAULT_IDLE_BATCH_S)
    idle_batch_s: float = DEFAULT_IDLE_BATCH_S


@dataclass(frozen=True)
class KafkaSourceSettings:
    """`sources.kafka`: topics holding log lines and metric records."""

    enabled: bool = False
    bootstrap_servers: str = "127.0.0.1:9092"
    logs_topics: tuple[str, ...] = ()
    metrics_topics: tuple[str, ...] = ()
    starting_offsets: str = "earliest"
    max_records_per_batch: int = 200_000
    reader: str = DEFAULT_KAFKA_READER
    # how a log record carries its line (schemas.inputs.Envelope) and the rules that name its cluster and broker
    # (jobs.sources.envelopes: preset names and {field, pattern, cluster} mappings, in order)
    logs_envelope: str = Envelope.RAW.value
    logs_mapping: tuple[MappingRule, ...] = ()
    # a shipped record whose origin was kept within this long (processing time) is dropped as delivered twice
    # (jobs.sources.dedup; "0 seconds": off)
    logs_dedup_horizon: str = DEFAULT_DEDUP_HORIZON
    # how the source logs in to a secured cluster (jobs.sources.kafka_security: files and variables, no secret)
    security: KafkaSecurity = field(default_factory=KafkaSecurity)


@dataclass(frozen=True)
class PrometheusTarget:
    """One endpoint of `sources.prometheus.targets`; `cluster` None: the pipeline's cluster, else default_cluster."""

    url: str
    cluster: str | None = None
    broker_id: int | None = None


@dataclass(frozen=True)
class PrometheusSourceSettings:
    """`sources.prometheus`: live endpoints (JMX exporters, the reference broker) scraped every trigger."""

    enabled: bool = False
    targets: tuple[PrometheusTarget, ...] = ()
    # planewatch cluster.json files (or their directories), re-read every trigger; their targets belong to the
    # cluster named by the directory holding cluster.json unless `cluster` is set
    cluster_json: tuple[str, ...] = ()
    interval_s: float | None = None  # at most one scrape per target per this many seconds; None: the trigger interval
    timeout_s: float = 5.0  # per scrape (connect, request, answer)


@dataclass(frozen=True)
class PrometheusServerSettings:
    """`sources.prometheus_server`: the brokers' series read from the operator's Prometheus (its query API), no
    broker scraped a second time; `mapping` names each target's cluster and broker from its labels."""

    enabled: bool = False
    url: str = "http://127.0.0.1:9090"
    match: str = DEFAULT_MATCH  # one series selector: one query sees every target at one instant
    mapping: tuple[LabelRule, ...] = ()
    catch_up_s: float = DEFAULT_CATCH_UP_S  # a first start reads this far back
    max_window_s: float = DEFAULT_MAX_WINDOW_S  # one read spans at most this much of Prometheus' time
    timeout_s: float = QUERY_TIMEOUT_S
    auth: ServerAuth = field(default_factory=ServerAuth)


@dataclass(frozen=True)
class QualitySettings:
    """`quality`: Great Expectations on every silver micro-batch (row rules in Spark, GE on a bounded sample)."""

    enabled: bool = True
    sample_limit: int = 5_000
    # Great Expectations costs ~2 s of driver CPU per table and batch; with a 1-2 s trigger that would double the
    # detection delay, so the sample is validated at most once per table in this many seconds (0: every batch).
    # The hard row rules (Spark expressions) still run on every row of every batch.
    ge_interval_s: int = 60


# Retention per table in days (maintenance.retention_days): bronze holds every record for replays and audits of
# the parsers, a week; silver and quarantine a month of history for the rules and investigations; the latency
# table and the rollups a quarter for baselines; alerts and incidents a year (the resolved ones, by resolved_at).
DEFAULT_RETENTION_DAYS: Mapping[str, int] = {
    "raw_logs": 7, "raw_metrics": 7, "quarantine": 30, "state_change_events": 30, "request_events": 30,
    "metric_samples": 30, "dq_results": 30, "control_request_latency": 90, "metric_rollups_1m": 90, "alerts": 365,
    "incidents": 365,
}


@dataclass(frozen=True)
class MaintenanceSettings:
    """`maintenance`: the lake's table maintenance run by the pipeline (jobs.run.maintenance)."""

    enabled: bool = True
    # a pass over every table this often: a table gathers ~150 small files per partition in 5 minutes at a 2 s
    # trigger, which one compaction turns into one file in well under a second; every batch pays for them until then
    # (the pairing's latency MERGE went 59 -> 283 ms a batch over the first 9 uncompacted minutes of a soak)
    interval_s: float = 300.0
    # a partition is compacted once it holds this many files under the target size (fewer cost readers little)
    compact_min_files: int = 16
    # compacted files are written up to this size; a file at the target is never rewritten, which bounds what a
    # pass rewrites in a growing partition to one target's worth
    target_file_mb: int = 32
    # removed data files are deleted from disk this long after their removal: far longer than a replay reads a
    # crashed batch's files (the next trigger) or an API read uses a snapshot's (seconds)
    vacuum_retention_h: float = 6.0
    # the Delta log's commit files behind its newest checkpoint (and read by every streaming query) are deleted after
    # this long: every commit lists the log directory (an append: 18 ms beside 76 log files, 53 ms beside 4,200), so a
    # day's 43,000 commits would slow each by ~0.4 s. 15 minutes: ~550 files a table at a 2 s trigger (an hour's
    # 2,200 still cost the soak's log batch 0.05 s in its dq commit alone); the API reads the latest version, a
    # replay the last batch, and a stopped query keeps what it has not read
    log_retention_h: float = 0.25
    retention_days: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))


# The highest TCP port.
MAX_PORT = 65535


@dataclass(frozen=True)
class ObservabilitySettings:
    """`observability`: the pipeline's own metrics for Prometheus (jobs.run.observability)."""

    # the port of the driver's /metrics; None: not served (0: a free port, logged)
    metrics_port: int | None = None
    # the address it listens on: loopback unless a scraper on another host needs it
    metrics_host: str = "127.0.0.1"


@dataclass(frozen=True)
class Settings:
    """The whole pipeline configuration."""

    cluster: str | None = None
    default_cluster: str = "default"
    lake: str = "var/lake"
    checkpoints: str = "var/checkpoints"
    # the log queries and the pairing query: the latency path, from a Finished line to its alert
    trigger_interval: str = DEFAULT_TRIGGER
    # the metric queries and the rollups (None: trigger_interval); conf/pipeline.yaml ships 10 s: a scrape lands
    # every 15-60 s, so a shorter trigger only adds batches
    metrics_trigger_interval: str | None = None
    once: bool = False
    spark_master: str = "local[2]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    sink_mode: str = "delta-rs"
    # a file or scrape micro-batch of at most about this many records (sized by its logged offsets, before it is
    # read) runs process() on the driver, others on the executors (jobs.ingest.batch, one path); 0: always the executors
    driver_batch_max_rows: int = 20_000
    files: FileSourceSettings = field(default_factory=FileSourceSettings)
    kafka: KafkaSourceSettings = field(default_factory=KafkaSourceSettings)
    prometheus: PrometheusSourceSettings = field(default_factory=PrometheusSourceSettings)
    prometheus_server: PrometheusServerSettings = field(default_factory=PrometheusServerSettings)
    quality: QualitySettings = field(default_factory=QualitySettings)
    detection: Mapping[str, Any] = field(default_factory=dict)
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    source_file: str = ""

    def trigger_for(self, family: str) -> str:
        """The micro-batch interval of the queries of an input family (logs | metrics)."""
        if family == "metrics" and self.metrics_trigger_interval:
            return self.metrics_trigger_interval
        return self.trigger_interval

    def table_path(self, name: str) -> str:
        """Where table `name` lives in the lake."""
        return os.path.join(self.lake, name)

    def checkpoint_path(self, query: str) -> str:
        """Where query `query` keeps its checkpoint."""
        return os.path.join(self.checkpoints, query)


def _security(sec: _Reader) -> KafkaSecurity:
    """`sources.kafka.security`, checked: a SASL protocol names its user and one place for the password."""
    out = KafkaSecurity(
        protocol=sec.choice("protocol", "PLAINTEXT", PROTOCOLS),
        sasl_mechanism=sec.choice("sasl_mechanism", "SCRAM-SHA-512", SASL_MECHANISMS),
        **{name: sec.str_(name, None) for name in ("username", "password_file", "password_env", "ca_file",
                                                   "certificate_file", "key_file")},
    )
    if out.sasl and not out.username:
        raise sec.fail("username", f"protocol {out.protocol} needs a username")
    if out.sasl and bool(out.password_file) == bool(out.password_env):
        raise sec.fail("password_file", f"protocol {out.protocol} needs one of password_file, password_env")
    if bool(out.certificate_file) != bool(out.key_file):
        raise sec.fail("certificate_file", "a client certificate needs its key_file, and a key its certificate_file")
    return out


def _mapping(kafka: _Reader) -> tuple[MappingRule, ...]:
    items = kafka.raw.get("logs_mapping") or []
    if not isinstance(items, list):
        raise kafka.fail("logs_mapping", "expected a list of preset names and {field, pattern, cluster} mappings")
    try:
        return rules_from_config(items)
    except MappingError as e:
        raise kafka.fail("logs_mapping", str(e)) from e


class _Reader:
    """Typed access to one YAML mapping with key paths in the errors."""

    def __init__(self, raw: Mapping[str, Any], where: str, source: str) -> None:
        self.raw = raw
        self.where = where
        self.source = source

    def fail(self, key: str, msg: str) -> SettingsError:
        return SettingsError(f"{self.source}: {self.where}{key}: {msg}")

    def section(self, key: str, known: set[str]) -> _Reader:
        value = self.raw.get(key) or {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(set(value) - known)
        if unknown:
            raise self.fail(key, f"unknown keys {unknown} (known: {sorted(known)})")
        return _Reader(value, f"{self.where}{key}.", self.source)

    def str_(self, key: str, default: str | None, pattern: re.Pattern[str] | None = None) -> str | None:
        value = self.raw.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.fail(key, f"expected a string, got {value!r}")
        value = str(value)
        if pattern is not None and not pattern.match(value):
            raise self.fail(key, f"invalid value {value!r} (expected {pattern.pattern})")
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.raw.get(key, default)
        if value not in choices:
            raise self.fail(key, f"expected one of {list(choices)}, got {value!r}")
        return str(value)

    def bool_(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def pos_int(self, key: str, default: int) -> int:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(key, f"expected a positive integer, got {value!r}")
        return value

    def nonneg_int(self, key: str, default: int) -> int:
        v = self.raw.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(key, f"expected an integer >= 0, got {v!r}")
        return v

    def nonneg_number(self, key: str, default: float) -> float:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.fail(key, f"expected a number >= 0, got {value!r}")
        return float(value)

    def pos_number(self, key: str, default: float | None) -> float | None:
        value = self.raw.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(key, f"expected a positive number, got {value!r}")
        return float(value)

    def seconds(self, key: str) -> float | None:
        """A positive number of seconds, or an interval like '10 seconds'; None when unset."""
        value = self.raw.get(key)
        if isinstance(value, str):
            if not _INTERVAL.match(value.strip()):
                raise self.fail(key, f"expected seconds or e.g. '10 seconds', got {value!r}")
            return interval_seconds(value)
        return self.pos_number(key, None)

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key) or []
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, f"expected a list of names, got {value!r}")
        return tuple(value)


_TOP = {"cluster", "default_cluster", "lake", "checkpoints", "trigger", "spark", "sink", "sources", "quality",
        "detection", "maintenance", "observability"}  # fmt: skip


def parse_settings(raw: Mapping[str, Any] | None, source: str = "<settings>") -> Settings:
    """Validate a configuration mapping (the parsed YAML) into Settings."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _TOP)
    if unknown:
        raise SettingsError(f"{source}: unknown keys {unknown} (known: {sorted(_TOP)})")
    top = _Reader(raw, "", source)
    trigger = top.section("trigger", {"interval", "metrics_interval", "once"})
    spark = top.section("spark", {"master", "conf"})
    sink = top.section("sink", {"mode", "driver_batch_max_rows"})
    sources = top.section("sources", {"files", "kafka", "prometheus", "prometheus_server"})
    files = sources.section("files", {"enabled", "path", "max_bytes_per_batch", "tail_quiet_s", "clean_finished",
                                      "idle_batch_s"})
    kafka = sources.section(
        "kafka",
        {"enabled", "bootstrap_servers", "logs_topics", "metrics_topics", "starting_offsets", "max_records_per_batch",
         "reader", "logs_envelope", "logs_mapping", "logs_dedup_horizon", "security"},
    )
    quality = top.section("quality", {"enabled", "sample_limit", "ge_interval_s"})
    conf = spark.raw.get("conf") or {}
    if not isinstance(conf, Mapping):
        raise spark.fail("conf", "expected a mapping of Spark properties")
    detection = raw.get("detection") or {}
    if not isinstance(detection, Mapping):
        raise top.fail("detection", "expected a mapping")
    k = KafkaSourceSettings(
        enabled=kafka.bool_("enabled", False),
        bootstrap_servers=kafka.str_("bootstrap_servers", "127.0.0.1:9092") or "",
        logs_topics=kafka.str_list("logs_topics"),
        metrics_topics=kafka.str_list("metrics_topics"),
        starting_offsets=kafka.choice("starting_offsets", "earliest", ("earliest", "latest")),
        max_records_per_batch=kafka.pos_int("max_records_per_batch", 200_000),
        reader=kafka.choice("reader", DEFAULT_KAFKA_READER, KAFKA_READERS),
        logs_envelope=kafka.choice("logs_envelope", Envelope.RAW.value, tuple(e.value for e in Envelope)),
        logs_mapping=_mapping(kafka),
        logs_dedup_horizon=kafka.str_("logs_dedup_horizon", DEFAULT_DEDUP_HORIZON, _INTERVAL) or DEFAULT_DEDUP_HORIZON,
        security=_security(kafka.section("security", {f.name for f in fields(KafkaSecurity)})),
    )
    if k.reader == "spark" and k.security.protocol != "PLAINTEXT":
        raise kafka.fail("security", PYTHON_READER_ONLY)
    if k.enabled and not (k.logs_topics or k.metrics_topics):
        raise kafka.fail("logs_topics", "sources.kafka is enabled but names no logs_topics or metrics_topics")
    prom = _prometheus(sources.section("prometheus", {"enabled", "targets", "cluster_json", "interval", "timeout_s"}))
    return Settings(
        cluster=top.str_("cluster", None, _CLUSTER),
        default_cluster=top.str_("default_cluster", "default", _CLUSTER) or "default",
        lake=top.str_("lake", "var/lake") or "var/lake",
        checkpoints=top.str_("checkpoints", "var/checkpoints") or "var/checkpoints",
        trigger_interval=trigger.str_("interval", DEFAULT_TRIGGER, _INTERVAL) or DEFAULT_TRIGGER,
        metrics_trigger_interval=trigger.str_("metrics_interval", None, _INTERVAL),
        once=trigger.bool_("once", False),
        spark_master=spark.str_("master", "local[2]") or "local[2]",
        spark_conf={str(a): str(b) for a, b in conf.items()},
        sink_mode=sink.choice("mode", "delta-rs", SINK_MODES),
        driver_batch_max_rows=sink.nonneg_int("driver_batch_max_rows", 20_000),
        files=FileSourceSettings(
            enabled=files.bool_("enabled", True),
            path=files.str_("path", "var/input") or "var/input",
            max_bytes_per_batch=files.pos_int("max_bytes_per_batch", 64 * 1024 * 1024),
            tail_quiet_s=files.pos_number("tail_quiet_s", DEFAULT_TAIL_QUIET_S) or DEFAULT_TAIL_QUIET_S,
            clean_finished=files.choice("clean_finished", "keep", CLEAN_FINISHED),
            idle_batch_s=files.nonneg_number("idle_batch_s", DEFAULT_IDLE_BATCH_S),
        ),
        kafka=k,
        prometheus=prom,
        prometheus_server=_prometheus_server(sources.section(
            "prometheus_server", {"enabled", "url", "match", "mapping", "catch_up", "max_window", "timeout_s",
                                  "auth"})),
        quality=QualitySettings(
            enabled=quality.bool_("enabled", True),
            sample_limit=quality.pos_int("sample_limit", 5_000),
            ge_interval_s=quality.nonneg_int("ge_interval_s", 60),
        ),
        detection=dict(detection),
        maintenance=_maintenance(top),
        observability=_observability(top),
        source_file=source,
    )


def _maintenance(top: _Reader) -> MaintenanceSettings:
    m = top.section("maintenance", {"enabled", "interval_s", "compact_min_files", "target_file_mb",
                                    "vacuum_retention_h", "log_retention_h", "retention_days"})
    days = m.section("retention_days", set(DEFAULT_RETENTION_DAYS))
    d = MaintenanceSettings()
    return MaintenanceSettings(
        enabled=m.bool_("enabled", d.enabled),
        interval_s=m.pos_number("interval_s", d.interval_s) or d.interval_s,
        compact_min_files=m.pos_int("compact_min_files", d.compact_min_files),
        target_file_mb=m.pos_int("target_file_mb", d.target_file_mb),
        vacuum_retention_h=m.pos_number("vacuum_retention_h", d.vacuum_retention_h) or d.vacuum_retention_h,
        log_retention_h=m.pos_number("log_retention_h", d.log_retention_h) or d.log_retention_h,
        retention_days={t: days.nonneg_int(t, n) for t, n in DEFAULT_RETENTION_DAYS.items()},
    )


def _observability(top: _Reader) -> ObservabilitySettings:
    o = top.section("observability", {"metrics_port", "metrics_host"})
    d = ObservabilitySettings()
    port = None if o.raw.get("metrics_port") is None else o.nonneg_int("metrics_port", 0)
    if port is not None and port > MAX_PORT:
        raise o.fail("metrics_port", f"expected a port 0-{MAX_PORT} or null, got {port}")
    host = o.str_("metrics_host", d.metrics_host) or d.metrics_host
    return ObservabilitySettings(metrics_port=port, metrics_host=host)


def named_path(spec: str) -> str:
    """A `cluster_json` entry `[NAME=]PATH` with PATH made absolute (NAME: the cluster of its endpoints)."""
    name, path = split_named_path(spec)
    return os.path.abspath(path) if name is None else f"{name}={os.path.abspath(path)}"


def split_named_path(spec: str) -> tuple[str | None, str]:
    """(cluster name or None, path) of a `cluster_json` entry `[NAME=]PATH`."""
    name, sep, path = spec.partition("=")
    return (name, path) if sep and _CLUSTER.match(name) and "/" not in name else (None, spec)


def interval_seconds(text: str) -> float:
    """'10 seconds' / '500 milliseconds' / '1 minute' -> seconds (the trigger interval's syntax)."""
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(millisecond|second|minute|hour)s?$", text.strip())
    if m is None:
        raise SettingsError(f"not an interval: {text!r} (expected e.g. '10 seconds')")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def _selector(r: _Reader) -> str:
    """`match`: one series selector (a list of one is taken too; two queries would not see one instant)."""
    value = r.raw.get("match") or DEFAULT_MATCH
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str) or not value.strip():
        raise r.fail("match", f'expected one series selector like \'{{job=~"kafka|kraft"}}\' (combine several in '
                              f"one), got {value!r}")
    return value.strip()


def _prometheus_server(r: _Reader) -> PrometheusServerSettings:
    """`sources.prometheus_server`, checked: an http(s) URL, selectors, label rules, at most one bearer token or
    basic-auth password place."""
    items = r.raw.get("mapping") or []
    if not isinstance(items, list):
        raise r.fail("mapping", "expected a list of preset names and {label, pattern, cluster} rules")
    try:
        mapping = label_rules(items)
    except LabelError as e:
        raise r.fail("mapping", str(e)) from e
    auth = r.section("auth", {f.name for f in fields(ServerAuth)})
    a = ServerAuth(**{f.name: auth.str_(f.name, None) for f in fields(ServerAuth)})
    if (a.bearer_token_file and a.bearer_token_env) or (a.password_file and a.password_env):
        raise auth.fail("bearer_token_file", "name one place per secret: a file or a variable")
    if (a.bearer_token_file or a.bearer_token_env) and a.username:
        raise auth.fail("username", "a bearer token or basic auth, not both")
    if a.username and not (a.password_file or a.password_env):
        raise auth.fail("username", "basic auth needs password_file or password_env")
    out = PrometheusServerSettings(
        enabled=r.bool_("enabled", False),
        url=r.str_("url", "http://127.0.0.1:9090", _URL) or "",
        match=_selector(r),
        mapping=mapping,
        catch_up_s=r.seconds("catch_up") or DEFAULT_CATCH_UP_S,
        max_window_s=r.seconds("max_window") or DEFAULT_MAX_WINDOW_S,
        timeout_s=r.pos_number("timeout_s", QUERY_TIMEOUT_S) or QUERY_TIMEOUT_S,
        auth=a,
    )
    if out.enabled and not out.mapping:
        raise r.fail("mapping", "sources.prometheus_server is enabled but has no label rules (presets: labels, "
                                "jmx_exporter, strimzi, confluent)")
    return out


def _prometheus(r: _Reader) -> PrometheusSourceSettings:
    raw_targets = r.raw.get("targets") or []
    if not isinstance(raw_targets, list):
        raise r.fail("targets", f"expected a list of {{url, cluster, broker_id}}, got {raw_targets!r}")
    targets = []
    for i, entry in enumerate(raw_targets):
        if not isinstance(entry, Mapping):
            raise r.fail(f"targets[{i}]", f"expected a mapping {{url, cluster, broker_id}}, got {entry!r}")
        t = _Reader(entry, f"{r.where}targets[{i}].", r.source)
        unknown = sorted(set(entry) - {"url", "cluster", "broker_id"})
        if unknown:
            raise r.fail(f"targets[{i}]", f"unknown keys {unknown} (known: ['broker_id', 'cluster', 'url'])")
        url = t.str_("url", None, _URL)
        if url is None:
            raise t.fail("url", "missing (e.g. http://127.0.0.1:9404/metrics)")
        broker = entry.get("broker_id")
        if broker is not None and (isinstance(broker, bool) or not isinstance(broker, int) or broker < 0):
            raise t.fail("broker_id", f"expected an integer >= 0, got {broker!r}")
        targets.append(PrometheusTarget(url, t.str_("cluster", None, _CLUSTER), broker))
    cluster_json = r.str_list("cluster_json")
    p = PrometheusSourceSettings(
        enabled=r.bool_("enabled", False),
        targets=tuple(targets),
        cluster_json=cluster_json,
        interval_s=r.seconds("interval"),
        timeout_s=r.pos_number("timeout_s", 5.0) or 5.0,
    )
    if p.enabled and not (p.targets or p.cluster_json):
        raise r.fail("targets", "sources.prometheus is enabled but names no targets or cluster_json")
    return p


def load_settings(path: str | os.PathLike[str] | None = None, args: argparse.Namespace | None = None) -> Settings:
    """Load and validate the YAML file (default conf/pipeline.yaml), then apply the command-line overrides."""
    cfg = Path(path) if path else DEFAULT_CONFIG
    try:
        raw = yaml.safe_load(cfg.read_text()) if cfg.exists() or path else {}
    except OSError as exc:
        raise SettingsError(f"cannot read {cfg}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise SettingsError(f"{cfg}: not valid YAML: {exc}") from exc
    settings = parse_settings(raw, str(cfg))
    return apply_overrides(settings, args) if args is not None else settings


def apply_overrides(settings: Settings, args: argparse.Namespace) -> Settings:
    """`--input --lake --checkpoints --cluster --once --trigger --master --sink-mode` win over the file; `--scrape`
    adds cluster.json files to sources.prometheus and enables it."""
    s = settings
    if getattr(args, "input", None):
        if not os.path.exists(args.input):
            raise SettingsError(f"--input {args.input}: no such file or directory")
        s = replace(s, files=replace(s.files, path=args.input, enabled=True))
    if getattr(args, "lake", None):
        s = replace(s, lake=args.lake)
    if getattr(args, "checkpoints", None):
        s = replace(s, checkpoints=args.checkpoints)
    if getattr(args, "cluster", None):
        if not _CLUSTER.match(args.cluster):
            raise SettingsError(f"--cluster {args.cluster!r}: letters, digits and _.:- only")
        s = replace(s, cluster=args.cluster)
    if getattr(args, "once", False):
        s = replace(s, once=True)
    if getattr(args, "trigger", None):
        if not _INTERVAL.match(args.trigger):
            raise SettingsError(f"--trigger {args.trigger!r}: expected e.g. '10 seconds' or '500 milliseconds'")
        s = replace(s, trigger_interval=args.trigger, metrics_trigger_interval=args.trigger)
    if getattr(args, "master", None):
        s = replace(s, spark_master=args.master)
    if getattr(args, "sink_mode", None):
        s = replace(s, sink_mode=args.sink_mode)
    if getattr(args, "scrape", None):
        paths = tuple(named_path(p) for p in args.scrape)
        s = replace(s, prometheus=replace(s.prometheus, enabled=True,
                                          cluster_json=s.prometheus.cluster_json + paths))
    if getattr(args, "scrape_interval", None) is not None:
        if args.scrape_interval <= 0:
            raise SettingsError(f"--scrape-interval {args.scrape_interval}: seconds above 0")
        s = replace(s, prometheus=replace(s.prometheus, interval_s=float(args.scrape_interval)))
    return s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The common flags of `planewatch pipeline` and the spark-submit jobs."""
    parser.add_argument("--config", default=None, help=f"pipeline YAML (default {DEFAULT_CONFIG})")
    parser.add_argument("--input", metavar="DIR", help="a tree of Kafka log and metric files (sources.files.path)")
    parser.add_argument("--lake", metavar="DIR", help="where the Delta tables live (a directory or s3://bucket/prefix)")
    parser.add_argument("--checkpoints", metavar="DIR", help="where the streaming checkpoints live")
    parser.add_argument("--cluster", metavar="NAME", help="cluster name for every input (else per first-level dir)")
    parser.add_argument("--once", action="store_true", help="process what is there now, then stop")
    parser.add_argument("--trigger", metavar="INTERVAL",
                        help="micro-batch interval of every query (trigger.interval and trigger.metrics_interval), "
                             "e.g. '2 seconds'")
    parser.add_argument("--sink-mode", choices=SINK_MODES, help="Delta writer (sink.mode)")
    parser.add_argument("--scrape", metavar="CLUSTER_JSON", action="append",
                        help="scrape the Prometheus endpoints a planewatch cluster.json (or its directory) lists, "
                             "every trigger (sources.prometheus.cluster_json; repeatable); NAME=CLUSTER_JSON names "
                             "their cluster")
    parser.add_argument("--scrape-interval", metavar="SECONDS", type=float, default=None,
                        help="at most one scrape per endpoint per this many seconds (sources.prometheus.interval)")
