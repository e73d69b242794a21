"""The metric parser: bronze ``raw_metrics`` rows -> one routed row per record, as polars expressions.

A metric record is a JSON line or a Prometheus exposition line. Per record, vectorized over the batch: trimming,
the format, the Prometheus line regex (or the JSON fields, read with JSON paths), the value and the timestamp. What
depends only on the metric's NAME and its tags or labels (the canonical signal, MBean and attribute of
:mod:`pipelines.parsing.metric_names`, the labels map, the listener/request/processor roles, duplicate labels) is
computed once per distinct (format, name, attribute, tag text) of the batch and joined back: a batch of 100,000
samples holds a few hundred distinct series, so these rules cost nothing per record.

A series has one sample per timestamp: a second sample of a series (its name, attribute and tags or labels, in any
order, on one cluster and broker) at a timestamp already seen in the batch is a duplicate (the same scrape shipped
twice, two sources of one file): the first one in the batch is kept, the others are routed unused with the reason
`dup_sample`, so they are counted and the batch still reconciles (before the quality rules: the first is the one
validated). A sample without its own timestamp (it takes the time it was read) is a duplicate only within its own
source: two scrape files read together are two scrapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import polars as pl

from pipelines.parsing import metric_names as N
from pipelines.parsing import metric_spec as S
from pipelines.parsing.rust_regex import to_rust
from pipelines.parsing.stages import MAX_EPOCH_MS, cut_by_reader, typed
from schemas.signals import SOURCES, Signal

__all__ = ["ROUTES", "camel", "parse_metrics", "percentile", "resolve_mbean", "resolve_prometheus"]

ROUTES = ("sample", "rejected", "unused")
_LABEL = re.compile(S.LABEL_RX, re.ASCII | re.DOTALL)
# Fields a metrics JSON line may carry (the reference broker's, and a metrics reporter's variants), each read as
# text, so a number, a string or null all parse and the casts decide; `tags`/`labels` (an object) come with them.
_JSON_LEAVES = ("ts", "timestamp", "broker_id", "mbean", "name", "metric", "attribute", "value")


def camel(text: str) -> str:
    """connection-count / connection_count -> ConnectionCount."""
    return "".join(w.capitalize() for w in text.translate(str.maketrans("-_", "  ")).split(" "))


def percentile(quantile: str) -> str | None:
    """0.99 -> 99thPercentile, 0.5 -> 50thPercentile, 0.999 -> 999thPercentile."""
    if not quantile.startswith("0."):
        return None
    frac = quantile.split(".")[-1]
    return (frac if len(frac) >= 2 else frac + "0") + "thPercentile"


def _entry(key: str) -> tuple[str, str, str] | None:
    e = N.KEYS.get(key)
    if e is None:
        return None
    signal, mbean, kind = e.split("|")
    return signal, mbean, kind


def resolve_prometheus(name: str, labels: Mapping[str, str | None]) -> tuple[str, str | None, str]:
    """(signal, mbean, attribute) of a Prometheus metric name (see metric_names for the rules)."""
    n = name.lower()
    exact = N.EXACT.get(n)
    if exact is not None:
        signal, attribute = exact
        return signal, SOURCES[Signal(signal)].mbean, attribute
    t = n[:-6] if n.endswith("_total") else n
    suffix = t.split("_")[-1]
    suffix_attr = N.ATTRIBUTE_SUFFIXES.get(suffix) if "_" in t else None
    quantile = labels.get("quantile")
    for cand in (n, t):
        e = _entry(N.compact(cand))
        if e is not None:
            q = percentile(quantile) if quantile is not None else None
            return e[0], e[1], q or N.KIND_DEFAULT_ATTRIBUTE[e[2]]
    if suffix_attr is not None:
        e = _entry(N.compact(t[: len(t) - len(suffix) - 1]))
        if e is not None:
            return e[0], e[1], suffix_attr
    for prefix, mbean in N.FAMILIES:
        if n.startswith(prefix):
            return camel(n[len(prefix):]), mbean, "Value"
    return name, None, "Value"


def resolve_mbean(raw: str, attribute: str | None) -> tuple[str, str | None, str, list[tuple[str, str]]]:
    """(signal, mbean, attribute, other tags) of an MBean name with a JSON `attribute`."""
    colon = raw.find(":")
    domain = raw.split(":")[0]
    props = raw[colon + 1:]
    pairs = [(p.split("=")[0], p[p.find("=") + 1:]) for p in props.split(",")]
    keys = [k for k, _ in pairs]
    mtype = pairs[keys.index("type")][1] if "type" in keys else None
    mname = pairs[keys.index("name")][1] if "name" in keys else None
    tags = [(k, v) for k, v in pairs if k not in ("type", "name")]
    e1 = _entry(N.compact(domain + (mtype or "") + mname)) if mname is not None and mtype is not None else None
    e2 = (_entry(N.compact(domain + mtype + attribute)) if attribute is not None and mtype is not None else None)
    if e1 is not None:
        return e1[0], e1[1], attribute if attribute is not None else N.KIND_DEFAULT_ATTRIBUTE[e1[2]], tags
    if e2 is not None:
        return e2[0], e2[1], "Value", tags
    family = None if mtype is None else f"{domain}:type={mtype}"
    if attribute is not None and any(family == fam for _, fam in N.FAMILIES):
        return camel(attribute), family, "Value", tags
    signal = next(v for v in (mname, attribute, raw) if v is not None)
    mbean = family if mname is None or family is None else f"{family},name={mname}"
    return signal, mbean, attribute if attribute is not None else "Value", tags


def _json_leaf(value: Any) -> str | None:
    """A JSON value as the text a STRING field holds (numbers as written, objects compact)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _series(fmt: str | None, raw_name: str | None, attribute: str | None, extra: str | None) -> dict[str, Any]:
    """Everything a sample takes from its name and tags: one call per distinct series of a batch."""
    out: dict[str, Any] = {"_ok": False, "_dup": False, "_series_key": None, "signal": None, "mbean": None,
                           "attribute": None, "listener": None, "request": None, "processor": None, "labels": None}
    if raw_name is None:
        return out
    if fmt == "json":
        obj = json.loads(extra, parse_int=str, parse_float=str, parse_constant=str) if extra else None
        extra_pairs = [(k, _json_leaf(v)) for k, v in (obj or {}).items()]
    else:
        extra_pairs = [(k, v) for k, v in _LABEL.findall(extra or "")]
    is_mbean = "=" in raw_name
    tags: list[tuple[str, str | None]] = list(resolve_mbean(raw_name, attribute)[3]) if is_mbean else []
    pairs = tags + extra_pairs
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        return {**out, "_ok": True, "_dup": True}
    d = dict(pairs)
    if is_mbean:
        signal, mbean, attr, _ = resolve_mbean(raw_name, attribute)
    else:
        signal, mbean, attr = resolve_prometheus(raw_name, d)

    def first(names: tuple[str, ...]) -> str | None:
        return next((d[k] for k in names if d.get(k) is not None), None)

    labels = [{"key": k, "value": v} for k, v in pairs if k not in S.ROLE_LABELS]
    # the series' identity: its name (an MBean's properties in any order), attribute and tags/labels as a set
    domain, _, props = raw_name.partition(":") if is_mbean else (raw_name, "", "")
    name_key = f"{domain}:{','.join(sorted(props.split(',')))}" if is_mbean else raw_name
    series_key = json.dumps([name_key, attr, sorted(extra_pairs)], separators=(",", ":"))
    return {"_ok": True, "_dup": False, "_series_key": series_key, "signal": signal, "mbean": mbean, "attribute": attr,
            "listener": first(S.LISTENER_LABELS), "request": first(S.REQUEST_LABELS),
            "processor": first(S.PROCESSOR_LABELS), "labels": labels}


def parse_metrics(df: pl.DataFrame) -> pl.DataFrame:
    """Bronze rows (RAW_METRICS columns) -> the same rows plus `_route`, `_reason`, `_stage` and the sample columns
    (`m_<name>`)."""
    R = S.REASONS
    s = pl.col("line").fill_null("").str.strip_chars(S.TRIM)
    mf = pl.col("metric_format")
    sniffed = pl.when(s.str.starts_with("{") | s.str.starts_with("[")).then(pl.lit("json")).otherwise(
        pl.lit("prometheus"))
    lf = df.lazy().with_columns(
        s.alias("_s"),
        pl.when(mf.is_null() | (mf == "")).then(sniffed).otherwise(mf).alias("_fmt"),
    )
    s = pl.col("_s")
    fmt = pl.col("_fmt")
    content = (s != "") & ~s.str.starts_with("#") & (fmt != S.SOURCE_ERROR_FORMAT)
    is_json = content & (fmt == "json")
    is_obj = is_json & s.str.starts_with("{")
    is_prom = content & (fmt != "json")
    obj = pl.when(is_obj).then(s)
    lf = lf.with_columns(
        is_json.alias("_is_json"),
        is_obj.alias("_is_obj"),
        obj.str.json_path_match("$").alias("_whole"),
        obj.str.json_path_match("$.tags").alias("_tags"),
        obj.str.json_path_match("$.labels").alias("_labels"),
        *[obj.str.json_path_match(f"$.{k}").alias(f"_j_{k}") for k in _JSON_LEAVES],
        pl.when(is_prom).then(s).str.extract_groups(to_rust("^(?P<_ok>)" + S.PROM_LINE[1:])).alias("_p"),
    )
    p = pl.col("_p")
    tags_text = pl.coalesce(pl.col("_tags"), pl.col("_labels"))
    json_bad = pl.col("_is_obj") & (
        pl.col("_whole").is_null() | ~pl.col("_whole").str.starts_with("{").fill_null(False)
        | (pl.col("_tags").is_not_null() & ~pl.col("_tags").str.starts_with("{"))
        | (pl.col("_labels").is_not_null() & ~pl.col("_labels").str.starts_with("{"))
    )
    j = {k: pl.col(f"_j_{k}") for k in _JSON_LEAVES}
    lf = lf.with_columns(
        json_bad.alias("_json_bad"),
        p.struct.field("_ok").is_not_null().alias("_prom_ok"),
        pl.when(pl.col("_is_json")).then(pl.coalesce(j["mbean"], j["name"], j["metric"]))
        .otherwise(p.struct.field("name")).alias("_raw_name"),
        pl.when(pl.col("_is_json")).then(j["value"]).otherwise(p.struct.field("value")).alias("_value_text"),
        pl.when(pl.col("_is_json")).then(pl.coalesce(j["ts"], j["timestamp"])).otherwise(p.struct.field("ts"))
        .alias("_ts_text"),
        pl.when(pl.col("_is_json")).then(j["attribute"]).alias("_attribute"),
        pl.when(pl.col("_is_json") & ~json_bad).then(tags_text).otherwise(p.struct.field("labels")).alias("_extra"),
    )
    lf = _join_series(lf)
    value = typed(pl.col("_value_text"), "double")
    ts_text = pl.col("_ts_text")
    has_ts = ts_text.is_not_null() & (ts_text != "")
    ms = ts_text.str.strip_chars().cast(pl.Int64, strict=False)
    ts_val = pl.when(ms.is_between(0, MAX_EPOCH_MS)).then(pl.from_epoch(ms, time_unit="ms")) \
        .dt.cast_time_unit("us").dt.replace_time_zone("UTC")
    json_broker = typed(j["broker_id"], "int")
    rn = pl.col("_raw_name")
    first_line = pl.col("line").fill_null("").str.splitn("\n", 2).struct.field("field_0")

    def rr(route: str, reason: str) -> tuple[pl.Expr, pl.Expr]:
        return pl.lit(route), pl.lit(reason)

    rules: list[tuple[pl.Expr, tuple[pl.Expr, pl.Expr]]] = [
        (fmt == S.SOURCE_ERROR_FORMAT, (pl.lit("rejected"), first_line)),
        (s == "", rr("unused", R["blank"])),
        (s.str.starts_with("#"), rr("unused", R["comment"])),
        ((fmt == "json") & ~s.str.starts_with("{"), rr("rejected", R["not_object"])),
        (pl.col("_json_bad"), rr("rejected", R["bad_json"])),
        ((fmt == "json") & rn.is_null(), rr("rejected", R["no_name"])),
        ((fmt == "json") & pl.col("_value_text").is_null(), rr("unused", R["null_value"])),
        ((fmt != "json") & ~pl.col("_prom_ok"), rr("rejected", R["not_prom"])),
        (pl.col("_dup").fill_null(False), rr("rejected", R["dup_label"])),
        (value.is_null(), rr("rejected", R["not_number"])),
        (value.is_nan(), rr("unused", R["nan_value"])),
        (has_ts & ts_val.is_null(), rr("rejected", R["bad_ts"])),
    ]
    route: Any = None
    reason: Any = None
    for cond, (ro, re_) in rules:
        route = pl.when(cond).then(ro) if route is None else route.when(cond).then(ro)
        reason = pl.when(cond).then(re_) if reason is None else reason.when(cond).then(re_)
    ts = pl.when(has_ts).then(ts_val).otherwise(pl.col("ingest_ts").dt.cast_time_unit("us"))
    route = route.otherwise(pl.lit("sample"))
    # a later sample of a series at a timestamp the batch already has (module docstring); the first one is kept
    sample = (route == "sample") & ~cut_by_reader(pl.col("line"), pl.col("line_bytes"))  # a cut one is rejected
    series = pl.struct(sample.alias("sample"), pl.col("cluster"), pl.col("_m_broker"), ts.alias("ts"),
                       pl.col("_series_key"), pl.when(has_ts).then(pl.lit(None, pl.String)).otherwise(pl.col("source"))
                       .alias("own_source"))
    dup = sample & ~series.is_first_distinct()
    lf = lf.with_columns(
        pl.when(pl.col("_is_json")).then(pl.coalesce(json_broker, pl.col("broker_id")))
        .otherwise(pl.col("broker_id")).alias("_m_broker"))
    return lf.with_columns(
        pl.when(dup).then(pl.lit("unused")).otherwise(route).alias("_route"),
        pl.when(dup).then(pl.lit(R["dup_sample"])).otherwise(reason.otherwise(pl.lit(None, pl.String)))
        .alias("_reason"),
        pl.when(fmt == S.SOURCE_ERROR_FORMAT).then(pl.lit(S.SOURCE_STAGE)).otherwise(pl.lit("parse")).alias("_stage"),
        pl.col("_m_broker").alias("m_broker_id"),
        ts.alias("m_ts"),
        value.alias("m_value"),
        rn.alias("m_raw_name"),
        fmt.alias("m_metric_format"),
    ).collect()


def _join_series(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Join every row to its series' resolution (computed once per distinct series of the batch)."""
    keys = ["_fmt", "_raw_name", "_attribute", "_extra"]
    distinct = lf.select(keys).unique().collect()
    label_type = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))
    schema: dict[str, Any] = {"_ok": pl.Boolean, "_dup": pl.Boolean, "_series_key": pl.String, "signal": pl.String,
              "mbean": pl.String,
              "attribute": pl.String, "listener": pl.String, "request": pl.String, "processor": pl.String,
              "labels": label_type}
    resolved = [_series(f, n, a, x) for f, n, a, x in distinct.iter_rows()]
    table = pl.DataFrame(resolved, schema=schema) if resolved else pl.DataFrame(schema=schema)
    table = pl.concat([distinct, table.rename({c: f"m_{c}" for c in schema if not c.startswith("_")})],
                      how="horizontal")
    return lf.join(table.lazy(), on=keys, how="left", nulls_equal=True, maintain_order="left")
