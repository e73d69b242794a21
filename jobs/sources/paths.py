"""What a file under the input tree is: logs or metrics, which kind, which cluster and broker (pure, no Spark).

Kafka names its files (`state-change.log`, `kafka-request.log`, `server.log`, `controller.log`, rotated with a
`.YYYY-MM-DD-HH` suffix); metric files are JSON lines (`*.jsonl`, `*.json`) or Prometheus text (`*.prom`, `*.txt`).
Other names are sniffed from their first bytes. Kafka's own data files (segments, indexes, checkpoints, a
partition's `partition.metadata` and `leader-epoch-checkpoint`, `meta.properties`, KRaft's `quorum-state`) and binary
files are never read as input.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from jobs.sources.entries import NotRegularFile, open_regular
from schemas.inputs import (
    LOG_FILE_NAMES,
    LOG_KIND_BY_LOGGER,
    METRIC_FILE_EXTENSIONS,
    InputFamily,
    LogKind,
    MetricFormat,
)

__all__ = ["FAMILIES", "FileInfo", "broker_id_from_path", "classify_name", "describe", "ignored_name", "is_finished",
           "sniff"]

FAMILIES: tuple[InputFamily, ...] = tuple(InputFamily)
# Sniffing looks at the first bytes only: enough for a log4j line or a Prometheus comment.
SNIFF_BYTES = 4096

_LOG_NAMES: tuple[tuple[re.Pattern[str], LogKind], ...] = tuple((re.compile(rx), kind) for kind, rx in LOG_FILE_NAMES)
_SNIFF_LOGGERS = tuple((kind, logger.encode()) for kind, logger in LOG_KIND_BY_LOGGER)
# Kafka log segments, indexes and checkpoints live next to logs in a broker's working directory.
_KAFKA_DATA = re.compile(r"^\d{20}\.(log|index|timeindex|snapshot|txnindex)(\.deleted|\.cleaned|\.swap)?$")
# `.out`: a JVM's console file (Kafka's kafkaServer.out, zookeeper.out): the console appender's copy of server.log
# plus the JVM's own output (GC warnings, log4j status lines) in no Kafka layout.
# The state files Kafka keeps beside them in its log directories (a partition's topic id and leader epochs, a log
# directory's checkpoints and identity, the KRaft quorum's state): `partition.metadata` ("version: 0" then
# "topic_id: ...") read as a Prometheus sample and quarantined a line per partition, `quorum-state` as metric JSON.
_KAFKA_STATE_FILES = frozenset({"partition.metadata", "leader-epoch-checkpoint", "meta.properties", "quorum-state",
                                "cleaner-offset-checkpoint", "recovery-point-offset-checkpoint",
                                "replication-offset-checkpoint", "log-start-offset-checkpoint"})
# Configuration an operator keeps beside the logs (server.properties, log4j.properties, the JMX exporter's YAML) is
# no input: the exporter's `startDelaySeconds: 120` reads as a Prometheus sample, its rules as broken ones.
_CONFIG_SUFFIX = (".properties", ".yaml", ".yml", ".xml", ".conf", ".sh")
_SKIP_SUFFIX = (".gz", ".zip", ".zst", ".bz2", ".xz", ".crc", ".checkpoint", ".lock", ".parquet", ".pid", ".out",
                *_CONFIG_SUFFIX)
_BROKER_RE = re.compile(r"(?:^|[^A-Za-z0-9])broker[-_]?(\d+)(?:[^0-9]|$)", re.IGNORECASE)
_PROM_LINE = re.compile(rb"^(# (HELP|TYPE) |[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEnaNIif]+)")
_LOG4J_START = re.compile(rb"^(\S+ (stdout|stderr) [FP] |[\w.-]+\s+\| )?(\[\d{4}-\d\d-\d\d|\d{4}-\d\d-\d\d[ T])")
# The JVM's GC log under another name: unified logging (Java 9+, `-Xlog:gc*`: `[<decorations>][gc,heap] ...`, its
# tags starting with gc) or Java 8's -Xloggc (a VM banner, or `<ISO time>: <uptime>: [GC ...`).
_GC_START = re.compile(rb"^(\[[^\]\n]*\])*\[gc[, \]]|^(OpenJDK|Java HotSpot\(TM\)) 64-Bit Server VM|"
                       rb"^\d{4}-\d\d-\d\dT[\d:.]+[+-]\d{4}: \d+\.\d+: \[")
# A log file renamed by log4j's rolling appender (`state-change.log.2024-05-10-09`, `server.log.1`): never written
# again.
_ROTATED_LOG = re.compile(r"\.log\.[^/]+$")


@dataclass(frozen=True)
class FileInfo:
    """A classified input file: `family` logs|metrics, `kind` (log_kind or metric_format), cluster, broker."""

    family: str
    kind: str  # schemas.inputs: a LogKind or MetricFormat
    cluster: str
    broker_id: int | None


def broker_id_from_path(rel_path: str) -> int | None:
    """The broker id of a `broker-<id>` (or `broker<id>`, `broker_<id>`) directory or file name, innermost first."""
    for part in reversed(rel_path.replace(os.sep, "/").split("/")):
        m = _BROKER_RE.search(part)
        if m:
            return int(m.group(1))
    return None


def classify_name(name: str) -> tuple[str, str] | None:
    """(family, kind) from the file name alone, None when the name says nothing."""
    for rx, kind in _LOG_NAMES:
        if rx.match(name):
            return InputFamily.LOGS, kind
    ext = os.path.splitext(name)[1].lower()
    if ext in METRIC_FILE_EXTENSIONS:
        return InputFamily.METRICS, METRIC_FILE_EXTENSIONS[ext]
    return None


def sniff(head: bytes) -> tuple[str, str] | None:
    """(family, kind) from a file's first bytes; None for binary or unrecognisable content."""
    if not head or b"\x00" in head:
        return None
    first = head.lstrip().split(b"\n", 1)[0]
    if _GC_START.match(first):  # before Prometheus: "OpenJDK 64-Bit ..." reads as a sample
        return InputFamily.LOGS, LogKind.GC
    if first.startswith(b"{"):
        return InputFamily.METRICS, MetricFormat.JSON
    if _PROM_LINE.match(first):
        return InputFamily.METRICS, MetricFormat.PROMETHEUS
    if _LOG4J_START.match(first):
        for kind, logger in _SNIFF_LOGGERS:
            if logger in head:
                return InputFamily.LOGS, kind
        return InputFamily.LOGS, LogKind.UNKNOWN
    return None


def ignored_name(name: str) -> bool:
    """Whether a file of this name is never input (hidden, Kafka's data files, archives, pid and lock files,
    configuration)."""
    return (name.startswith((".", "_")) or bool(_KAFKA_DATA.match(name)) or name in _KAFKA_STATE_FILES
            or name.endswith(_SKIP_SUFFIX))


def is_finished(name: str, info: FileInfo) -> bool:
    """Whether a file is written once and never appended to: a Prometheus scrape answer (`*.prom`, `*.txt`) or a
    log rotated away by log4j. Its last line is complete without a newline; a growing log's is not (yet)."""
    if info.family == InputFamily.METRICS:
        return info.kind == MetricFormat.PROMETHEUS
    return bool(_ROTATED_LOG.search(name))


def _is_json_document(path: str) -> bool:
    """A pretty-printed JSON document (first line `{` or `[` alone), e.g. a cluster description, is not metric JSON
    lines (one object per line); reading it line by line would only fill the quarantine."""
    try:
        with open_regular(path) as fh:
            first = fh.read(SNIFF_BYTES).lstrip().split(b"\n", 1)[0].strip()
    except (OSError, NotRegularFile):
        return False
    return first in (b"{", b"[")


def describe(root: str, path: str, cluster: str | None, default_cluster: str) -> FileInfo | None:
    """Classify `path` (under `root`); None when it is not an input file (or has vanished).

    The cluster is `cluster` when given; else the first directory level under `root` when the file sits below one
    that is not itself a `broker-<id>` directory; else `default_cluster`. Raises NotRegularFile when the name says
    nothing and the entry cannot be read to sniff its first bytes (not a regular file, or unreadable).
    """
    name = os.path.basename(path)
    if ignored_name(name):
        return None
    fam_kind = classify_name(name)
    if fam_kind == (InputFamily.METRICS, MetricFormat.JSON) and _is_json_document(path):
        return None
    if fam_kind is None:
        try:
            with open_regular(path) as fh:  # never a FIFO's blocking open
                fam_kind = sniff(fh.read(SNIFF_BYTES))
        except FileNotFoundError:
            return None
    if fam_kind is None:
        return None
    rel = os.path.relpath(path, root)
    parts = rel.replace(os.sep, "/").split("/")
    if cluster:
        name_cluster = cluster
    elif len(parts) >= 2 and broker_id_from_path(parts[0]) is None and parts[0] != "metrics":
        name_cluster = parts[0]
    else:
        name_cluster = default_cluster
    return FileInfo(fam_kind[0], fam_kind[1], name_cluster, broker_id_from_path(rel))
