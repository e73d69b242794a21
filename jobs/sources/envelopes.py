"""Kafka records of a logs topic -> raw-record columns, through a log shipper's envelope and the mapping rules that
tell each line's cluster and broker (pure, vectorized polars; jobs.sources.kafka_records calls it per batch).

An envelope (:class:`schemas.inputs.Envelope`) is read by JSON paths, the first that holds a value winning
(:data:`PRESETS`, each shipper's documented field names): the line, and its origin (:class:`OriginField`: host,
file, pod, container, namespace, a Strimzi pod's cluster label, and the shipper's byte offset or record number in
the file where it sends one). Mapping rules (:class:`MappingRule`, presets in :data:`MAPPING_PRESETS`) match an
origin field with a regex whose named groups `cluster` and `broker` name them; per group the first rule that gives
it wins; the pipeline's `cluster` setting, when set, names every record's cluster.

A record becomes one raw record (an OpenTelemetry record: one per log record it carries) with:

* `line` the log line, `kind` from the file's name (Kafka's names, schemas.inputs.LOG_FILE_NAMES), else from the
  line's logger, else unknown (the parsers classify such lines one by one);
* `source` / `source_offset`: `<host or pod>:<file>` and the shipper's offset when the envelope carries both, so
  the same line shipped twice has the same origin; else the Kafka record's `kafka:<topic>/<partition>` and offset
  (an OpenTelemetry record's n-th log record: offset x OTEL_RECORDS_PER_OFFSET + n);
* a record over MAX_RECORD_BYTES, or one that cannot be opened (not JSON, no line, a cluster or broker no rule gives
  while rules are set) becomes a `source-error` record: its line is the reason, then the head of the record; the
  engine quarantines it whole with that reason at stage `source` (input = accepted + quarantined + unused holds per
  Kafka record).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from schemas.inputs import LOG_FILE_NAMES, LOG_KIND_BY_LOGGER, Envelope, LogKind, OriginField
from schemas.routes import SOURCE_ERROR_FORMAT

__all__ = [
    "MAPPING_PRESETS",
    "MAX_RECORD_BYTES",
    "OTEL_RECORDS_PER_OFFSET",
    "PRESETS",
    "EnvelopeFields",
    "MappingError",
    "MappingRule",
    "naming_problem",
    "open_envelopes",
    "rules_from_config",
    "rules_json",
]

# An OpenTelemetry record's log records get source offsets offset x this + their index: a batch of the collector's
# kafka exporter holds at most `sending_queue` x batch size records, far below it.
OTEL_RECORDS_PER_OFFSET = 1 << 20
# A rejected record keeps at most this many characters of itself after its reason (quarantine cuts records too).
REJECT_HEAD_CHARS = 500
# A record larger than this is quarantined whole (its reason and head), not opened: Kafka's default
# max.message.bytes and the shipper template's maxMessageSize are 1 MiB, so a larger one is not one log record (a
# heap dump, a binary written to the wrong topic).
MAX_RECORD_BYTES = 1 << 20
_O = OriginField


@dataclass(frozen=True)
class EnvelopeFields:
    """The JSON paths of one shipper's envelope, per field (first path with a value wins)."""

    line: tuple[str, ...]
    origin: Mapping[OriginField, tuple[str, ...]] = field(default_factory=dict)
    #: the shipper's position of the line in its file: a byte offset, or a record number
    offset: tuple[str, ...] = ()


def _otel_attr(where: str, key: str) -> str:
    return f"$.{where}[?(@.key=='{key}')].value.stringValue"


#: Each shipper's fields, from its documentation: Vector's file and kubernetes_logs sources (JSON codec), Fluent
#: Bit's tail input with `Path_Key file` and `Offset_Key offset` and the kubernetes filter, Filebeat's ECS fields
#: (`log.file.path`, `log.offset`, `host.name`, `kubernetes.*`), rsyslog with conf/rsyslog/planewatch.conf's
#: template (imfile's `$!metadata!filename` and `fileoffset`), the collector's filelog receiver with
#: `include_file_path` and `include_file_record_number` (OpenTelemetry's semantic conventions; paths relative to one
#: log record and its resource, jobs.sources.envelopes opens the nesting).
PRESETS: dict[Envelope, EnvelopeFields] = {
    Envelope.RSYSLOG: EnvelopeFields(("$.line", "$.msg"), {_O.HOST: ("$.host",), _O.FILE: ("$.file",)},
                                     ("$.offset",)),
    Envelope.VECTOR: EnvelopeFields(("$.message",), {
        _O.HOST: ("$.host", "$.kubernetes.pod_node_name"), _O.FILE: ("$.file",), _O.POD: ("$.kubernetes.pod_name",),
        _O.CONTAINER: ("$.kubernetes.container_name",), _O.NAMESPACE: ("$.kubernetes.pod_namespace",),
        _O.STRIMZI_CLUSTER: ("$.kubernetes.pod_labels['strimzi.io/cluster']",)}),
    Envelope.FLUENT_BIT: EnvelopeFields(("$.log", "$.message"), {
        _O.HOST: ("$.hostname", "$.host", "$.kubernetes.host"), _O.FILE: ("$.file", "$.filename", "$.path"),
        _O.POD: ("$.kubernetes.pod_name",), _O.CONTAINER: ("$.kubernetes.container_name",),
        _O.NAMESPACE: ("$.kubernetes.namespace_name",),
        _O.STRIMZI_CLUSTER: ("$.kubernetes.labels['strimzi.io/cluster']",)}, ("$.offset",)),
    Envelope.FILEBEAT: EnvelopeFields(("$.message",), {
        _O.HOST: ("$.host.name", "$.host.hostname"), _O.FILE: ("$.log.file.path",),
        _O.POD: ("$.kubernetes.pod.name",), _O.CONTAINER: ("$.kubernetes.container.name",),
        _O.NAMESPACE: ("$.kubernetes.namespace",),
        _O.STRIMZI_CLUSTER: ("$.kubernetes.labels['strimzi_io/cluster']",
                             "$.kubernetes.labels['strimzi.io/cluster']")}, ("$.log.offset",)),
    Envelope.OTEL: EnvelopeFields(("$.body.stringValue",), {
        _O.HOST: (_otel_attr("resource.attributes", "host.name"),),
        _O.FILE: (_otel_attr("attributes", "log.file.path"),),
        _O.POD: (_otel_attr("resource.attributes", "k8s.pod.name"),),
        _O.CONTAINER: (_otel_attr("resource.attributes", "k8s.container.name"),),
        _O.NAMESPACE: (_otel_attr("resource.attributes", "k8s.namespace.name"),),
        _O.STRIMZI_CLUSTER: (_otel_attr("resource.attributes", "k8s.pod.label.strimzi.io/cluster"),)},
        ("$.attributes[?(@.key=='log.file.record_number')].value.intValue",)),
}


def naming_problem(pattern: str, cluster: str | None) -> str | None:
    """Why a naming rule's regex cannot name a cluster or broker (a bad regex; no `cluster`/`broker` group and no
    fixed cluster), or None. The rules of shippers' envelopes and of Prometheus's labels share it."""
    try:
        groups = re.compile(pattern).groupindex
    except re.error as e:
        return f"bad regex {pattern!r}: {e}"
    if not ({"cluster", "broker"} & set(groups)) and cluster is None:
        return f"{pattern!r} has no (?P<cluster>..) or (?P<broker>..) group and no cluster"
    return None


class MappingError(ValueError):
    """A mapping rule that cannot work: an unknown field or preset, a bad regex, no `cluster`/`broker` group."""


@dataclass(frozen=True)
class MappingRule:
    """`pattern` (a regex, searched) over the origin field `field`: its named groups `cluster` and `broker` name the
    record's; `cluster` names the cluster when the pattern has no such group."""

    field: OriginField
    pattern: str
    cluster: str | None = None

    def __post_init__(self) -> None:
        problem = naming_problem(self.pattern, self.cluster)
        if problem:
            raise MappingError(f"mapping rule on {self.field}: {problem}")


#: Mapping presets: `strimzi` (the cluster from the pod's strimzi.io/cluster label where the shipper adds labels,
#: else from a `<cluster>-kafka-<id>` pod name; the broker from the pod name's last number: `<cluster>-<pool>-<id>`
#: with node pools), `host` (`kafka-07.prod-us...`, `kafka07.prod-us`), `tree` (planewatch's input tree:
#: `.../<cluster>/broker-<id>/<file>`), `key` (a record key `broker-2` or `2`, the raw envelope's default).
MAPPING_PRESETS: dict[str, tuple[MappingRule, ...]] = {
    "strimzi": (MappingRule(_O.STRIMZI_CLUSTER, r"^(?P<cluster>.+)$"),
                MappingRule(_O.POD, r"^(?P<cluster>.+)-kafka-(?P<broker>[0-9]+)$"),
                MappingRule(_O.POD, r"-(?P<broker>[0-9]+)$")),
    "host": (MappingRule(_O.HOST, r"^[a-z-]*?(?P<broker>[0-9]+)\.(?P<cluster>[A-Za-z0-9_-]+)"),),
    "tree": (MappingRule(_O.FILE, r"(?:^|/)(?P<cluster>[^/]+)/broker[-_]?(?P<broker>[0-9]+)/[^/]+$"),),
    "key": (MappingRule(_O.KEY, r"(?:^|[^A-Za-z0-9])broker[-_]?(?P<broker>[0-9]+)(?:[^0-9]|$)"),
            MappingRule(_O.KEY, r"^(?P<broker>[0-9]+)$")),
}


def rules_from_config(items: Iterable[Any]) -> tuple[MappingRule, ...]:
    """`sources.kafka.logs_mapping`: preset names and `{field, pattern[, cluster]}` mappings, in order.

    Raises:
        MappingError: an unknown preset or field, a bad regex, a rule naming neither cluster nor broker.
    """
    out: list[MappingRule] = []
    for item in items:
        if isinstance(item, str):
            if item not in MAPPING_PRESETS:
                raise MappingError(f"unknown mapping preset {item!r} (known: {', '.join(MAPPING_PRESETS)})")
            out += MAPPING_PRESETS[item]
            continue
        if not isinstance(item, Mapping) or set(item) - {"field", "pattern", "cluster"} or "pattern" not in item:
            raise MappingError(f"a mapping rule is a preset name or {{field, pattern[, cluster]}}, not {item!r}")
        try:
            fld = OriginField(item.get("field", "host"))
        except ValueError as e:
            raise MappingError(f"unknown origin field {item.get('field')!r} (known: "
                               f"{', '.join(f.value for f in OriginField)})") from e
        out.append(MappingRule(fld, str(item["pattern"]), item.get("cluster")))
    return tuple(out)


def rules_json(rules: Sequence[MappingRule]) -> str:
    """Rules as the JSON list a data source option carries (:func:`rules_from_config` reads it back)."""
    return json.dumps([{"field": r.field.value, "pattern": r.pattern, "cluster": r.cluster} for r in rules])


def _first(text: pl.Expr, paths: Sequence[str]) -> pl.Expr:
    if not paths:
        return pl.lit(None, pl.String)
    return pl.coalesce([text.str.json_path_match(p) for p in paths])


def _kind(file: pl.Expr, line: pl.Expr) -> pl.Expr:
    name = file.str.extract(r"([^/\\]+)$", 1)
    out: Any = pl
    for kind, rx in LOG_FILE_NAMES:
        out = out.when(name.str.contains(rx)).then(pl.lit(kind.value))
    for kind, logger in LOG_KIND_BY_LOGGER:
        out = out.when(line.str.contains(logger, literal=True)).then(pl.lit(kind.value))
    result: pl.Expr = out.otherwise(pl.lit(LogKind.UNKNOWN.value))
    return result


_OTEL_KV = pl.List(pl.Struct({"key": pl.String, "value": pl.Struct({"stringValue": pl.String,
                                                                       "intValue": pl.String})}))
_OTEL = pl.Struct({"resourceLogs": pl.List(pl.Struct({
    "resource": pl.Struct({"attributes": _OTEL_KV}),
    "scopeLogs": pl.List(pl.Struct({"logRecords": pl.List(pl.Struct({
        "body": pl.Struct({"stringValue": pl.String}), "attributes": _OTEL_KV}))}))}))})


def _otel_records(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per log record of the OTLP/JSON records (`_text`), `_text` that log record with its resource as JSON
    (`{"body": .., "attributes": .., "resource": ..}`), `_n` its index in its Kafka record; records not OTLP/JSON
    keep one row with `_text` null."""
    ok = frame.filter(pl.col("_text").str.json_path_match("$.resourceLogs").is_not_null())
    bad = frame.filter(pl.col("_text").str.json_path_match("$.resourceLogs").is_null()).with_columns(
        pl.lit(None, pl.String).alias("_text"), pl.lit(0).alias("_n"))
    if ok.is_empty():
        return bad
    logs = (ok.with_columns(pl.col("_text").str.json_decode(_OTEL).struct.field("resourceLogs").alias("_rl"))
            .explode("_rl").with_columns(pl.col("_rl").struct.field("resource").alias("_res"),
                                         pl.col("_rl").struct.field("scopeLogs").alias("_sl"))
            .explode("_sl").with_columns(pl.col("_sl").struct.field("logRecords").alias("_lr")).explode("_lr")
            .filter(pl.col("_lr").is_not_null())
            .with_columns(pl.struct(body=pl.col("_lr").struct.field("body"),
                                    attributes=pl.col("_lr").struct.field("attributes"),
                                    resource=pl.col("_res")).struct.json_encode().alias("_text"))
            .with_columns(pl.int_range(pl.len()).over("_i").alias("_n"))
            .drop("_rl", "_res", "_sl", "_lr"))
    return pl.concat([logs, bad], how="diagonal_relaxed").sort("_i", "_n")


def _utf8(items: Sequence[bytes | None], keep_null: bool = False) -> pl.Series:
    """Bytes as text, vectorized; a batch holding invalid UTF-8 (rare) is decoded record by record, the invalid bytes
    replaced."""
    raw = pl.Series(list(items), dtype=pl.Binary)
    try:
        text = raw.cast(pl.String)
    except pl.exceptions.ComputeError:
        text = pl.Series([None if v is None else v.decode("utf-8", errors="replace") for v in items], dtype=pl.String)
    return text if keep_null else text.fill_null("")


def open_envelopes(values: Sequence[bytes | None], keys: Sequence[bytes | None], sources: Sequence[str],
                   offsets: Sequence[int], envelope: Envelope, rules: Sequence[MappingRule], cluster: str | None,
                   default_cluster: str) -> pl.DataFrame:
    """The raw-record columns (cluster, broker_id, kind, line, line_bytes, source, source_offset) of a batch of Kafka
    records (parallel sequences; `sources` as `kafka:<topic>/<partition>`), in input order (module docstring)."""
    frame = pl.DataFrame({
        "_i": pl.int_range(len(values), eager=True),
        "_orig": _utf8(values),
        "key": _utf8(keys, keep_null=True),
        "_ksource": pl.Series(list(sources), dtype=pl.String),
        "_koffset": pl.Series(list(offsets), dtype=pl.Int64),
        "_value_bytes": pl.Series([len(v or b"") for v in values], dtype=pl.Int64),
    }).with_columns(pl.col("_orig").str.strip_chars_end("\r\n")).with_columns(pl.col("_orig").alias("_text"))
    if envelope == Envelope.RAW:
        frame = frame.with_columns(pl.col("_text").alias("_line"), pl.lit(0).alias("_n"),
                                   pl.lit(True).alias("_json"),
                                   *[pl.lit(None, pl.String).alias(f.value) for f in OriginField if f != _O.KEY],
                                   pl.lit(None, pl.String).alias("_offset"))
        rules = rules or MAPPING_PRESETS["key"]
    else:
        spec = PRESETS[envelope]
        valid = pl.col("_text").str.json_path_match("$").is_not_null() & pl.col("_text").str.starts_with("{")
        frame = frame.with_columns(valid.alias("_json"))
        frame = _otel_records(frame) if envelope == Envelope.OTEL else frame.with_columns(pl.lit(0).alias("_n"))
        text = pl.col("_text")
        frame = frame.with_columns(
            _first(text, spec.line).alias("_line"),
            *[_first(text, spec.origin.get(f, ())).alias(f.value) for f in OriginField if f != _O.KEY],
            _first(text, spec.offset).alias("_offset"),
        )
    return _finish(frame, envelope, rules, cluster, default_cluster)


def _mapped(rules: Sequence[MappingRule], group: str) -> pl.Expr:
    parts = []
    for r in rules:
        if group in re.compile(r.pattern).groupindex:
            parts.append(pl.col(r.field.value).str.extract(r.pattern, re.compile(r.pattern).groupindex[group]))
        elif group == "cluster" and r.cluster is not None:
            parts.append(pl.when(pl.col(r.field.value).str.contains(r.pattern)).then(pl.lit(r.cluster)))
    return pl.coalesce(parts) if parts else pl.lit(None, pl.String)


def _finish(frame: pl.DataFrame, envelope: Envelope, rules: Sequence[MappingRule], cluster: str | None,
            default_cluster: str) -> pl.DataFrame:
    mapped_cluster = _mapped(rules, "cluster")
    broker = _mapped(rules, "broker").cast(pl.Int32, strict=False)
    where = pl.concat_str([pl.lit("host="), pl.col("host").fill_null("-"), pl.lit(" pod="),
                           pl.col("pod").fill_null("-"), pl.lit(" file="), pl.col("file").fill_null("-"),
                           pl.lit(" key="), pl.col("key").fill_null("-")])
    strict = envelope != Envelope.RAW
    reject = (
        pl.when(pl.col("_value_bytes") > MAX_RECORD_BYTES)
        .then(pl.lit("record of ") + pl.col("_value_bytes").cast(pl.String)
              + pl.lit(f" bytes, over the {MAX_RECORD_BYTES}-byte limit of one log record"))
        .when(~pl.col("_json")).then(pl.lit(f"{envelope.value} envelope: not a JSON object"))
        .when(pl.col("_text").is_null()).then(pl.lit(f"{envelope.value} envelope: no log record in it"))
        .when(pl.col("_line").is_null()).then(pl.lit(f"{envelope.value} envelope: no log line in its fields"))
        .when(pl.lit(strict and bool(rules) and cluster is None) & pl.col("_cluster").is_null())
        .then(pl.lit("no mapping rule names the cluster of ") + where)
        .when(pl.lit(strict and bool(rules)) & pl.col("broker_id").is_null())
        .then(pl.lit("no mapping rule names the broker of ") + where)
    )
    origin = pl.coalesce([pl.col("host"), pl.col("pod")])
    keyed = origin.is_not_null() & pl.col("file").is_not_null() & pl.col("_origin_offset").is_not_null()
    head = pl.col("_orig").str.slice(0, REJECT_HEAD_CHARS)
    out = (frame
           .with_columns(mapped_cluster.alias("_cluster"), broker.alias("broker_id"),
                         pl.col("_offset").cast(pl.Int64, strict=False).alias("_origin_offset"))
           .with_columns(reject.alias("_reject")))
    line = pl.when(pl.col("_reject").is_null()).then(pl.col("_line")) \
        .otherwise(pl.col("_reject") + pl.lit("\n") + head.fill_null(""))
    return out.select(
        pl.lit(cluster).fill_null(pl.col("_cluster")).fill_null(pl.lit(default_cluster)).alias("cluster"),
        "broker_id",
        pl.when(pl.col("_reject").is_null()).then(_kind(pl.col("file"), pl.col("_line")))
        .otherwise(pl.lit(SOURCE_ERROR_FORMAT)).alias("kind"),
        line.alias("line"),
        # a raw record's size is its value's (the engine's cut check compares it with the line); an opened one's, its
        # line's
        (pl.col("_value_bytes") if envelope == Envelope.RAW else line.str.len_bytes().cast(pl.Int64))
        .alias("line_bytes"),
        pl.when(keyed).then(pl.concat_str([origin, pl.lit(":"), pl.col("file")])).otherwise(pl.col("_ksource"))
        .alias("source"),
        pl.when(keyed).then(pl.col("_origin_offset"))
        .otherwise(pl.col("_koffset") * (OTEL_RECORDS_PER_OFFSET if envelope == Envelope.OTEL else 1) + pl.col("_n"))
        .alias("source_offset"),
    )
