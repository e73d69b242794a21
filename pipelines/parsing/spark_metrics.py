"""The metric parser as Spark Column expressions (built-in functions only): JSON lines and Prometheus text -> rows of
``metric_samples`` with one canonical signal per metric (:mod:`pipelines.parsing.metric_names`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from pipelines.parsing import metric_names as N
from pipelines.parsing import metric_spec as S
from pipelines.parsing.compiler import SlotLayout, compile_regex, layout_for
from pipelines.parsing.spark_logs import apply, field, matched, typed, utc_date
from pipelines.parsing.stages import MAX_EPOCH_MS
from schemas.tables import METRIC_SAMPLES, QUARANTINE_RECORD_CHARS, RAW_METRICS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["parse_metrics_routed", "route_metric_outputs"]

_MAX = 2**31 - 1
_PROM_SLOTS: SlotLayout = layout_for([S.PROM_LINE], S.PROM_FIELDS, concat=True)
_PROM = compile_regex(S.PROM_LINE, _PROM_SLOTS, concat=True)
_PROV = ["source", "source_offset", "ingest_ts", "batch_id"]


def _lit_map(d: dict[str, str]) -> Column:
    return F.create_map(*[F.lit(x) for kv in d.items() for x in kv])


def compact_col(c: Column) -> Column:
    """metric_names.compact as a Column."""
    # replace() per character, not translate(): Spark's translate looks every character of the text up in a HashMap
    # of Strings (a fifth of the metric parse's CPU); replace is a byte search that returns its input when absent
    for ch in "_:.- ":
        c = F.replace(c, F.lit(ch), F.lit(""))
    return F.lower(c)


def camel_col(c: Column) -> Column:
    """metric_names camel(): connection-count -> ConnectionCount."""
    return F.replace(F.initcap(F.translate(c, "-_", "  ")), F.lit(" "), F.lit(""))


def _entry_part(entry: Column, i: int) -> Column:
    return F.get(F.split(entry, r"\|"), i)


def _lookup(keys: Column, vals: Column, name: str) -> Column:
    return F.get(vals, (F.array_position(keys, F.lit(name)) - 1).cast("int"))


def _empty() -> Column:
    return F.array().cast("array<string>")


def parse_metrics_routed(raw: DataFrame) -> DataFrame:
    """raw (RAW_METRICS columns) -> one wide row per record with `_route` (sample|rejected|unused) and `_reason`."""
    keys_map = _lit_map(N.KEYS)
    s = F.btrim(F.coalesce(F.col("line"), F.lit("")), F.lit(S.TRIM))
    fmt = F.coalesce(
        F.col("metric_format"),
        F.when(F.startswith(s, F.lit("{")) | F.startswith(s, F.lit("[")), F.lit("json")).otherwise(F.lit("prometheus")),
    )
    a = raw.select(
        "*",
        s.alias("_s"),
        fmt.alias("_fmt"),
    )
    s = F.col("_s")
    content = (s != F.lit("")) & ~F.startswith(s, F.lit("#"))
    is_json = content & (F.col("_fmt") == F.lit("json"))
    is_obj = is_json & F.startswith(s, F.lit("{"))
    is_prom = content & (F.col("_fmt") != F.lit("json"))
    b = a.select(
        "*",
        F.when(is_obj, F.from_json(s, S.JSON_SCHEMA, {"columnNameOfCorruptRecord": "_corrupt_record"})).alias("_j"),
        F.when(is_prom, apply(s, _PROM)).alias("_pp"),
    )
    j = F.col("_j")
    pp = F.col("_pp")
    prom_ok = F.coalesce(matched(pp, len(_PROM_SLOTS.slots)), F.lit(False))
    pa = F.split(F.substring(pp, 2, _MAX), "\x01", -1)
    pf = {c: F.when(prom_ok, field(pa, _PROM_SLOTS, c)) for c in S.PROM_FIELDS}
    json_bad = is_obj & (j.isNull() | j["_corrupt_record"].isNotNull())
    raw_name = F.when(is_json, F.coalesce(j["mbean"], j["name"], j["metric"])).otherwise(pf["name"])
    labels_text = F.coalesce(pf["labels"], F.lit(""))
    jtags = F.coalesce(j["tags"], j["labels"])
    c = b.select(
        "*",
        json_bad.alias("_json_bad"),
        prom_ok.alias("_prom_ok"),
        raw_name.alias("_raw_name"),
        F.when(is_json, j["value"]).otherwise(pf["value"]).alias("_value_text"),
        F.when(is_json, F.coalesce(j["ts"], j["timestamp"])).otherwise(pf["ts"]).alias("_ts_text"),
        F.when(is_json, j["attribute"]).alias("_attribute"),
        F.when(is_json, F.coalesce(typed(j["broker_id"], "int"), F.col("broker_id")))
        .otherwise(F.col("broker_id"))
        .alias("_broker_id"),
        F.when(is_json, F.coalesce(F.map_keys(jtags), _empty()))
        .otherwise(F.regexp_extract_all(labels_text, F.lit(S.LABEL_RX), 1))
        .alias("_xk"),
        F.when(is_json, F.coalesce(F.map_values(jtags), _empty()))
        .otherwise(F.regexp_extract_all(labels_text, F.lit(S.LABEL_RX), 2))
        .alias("_xv"),
    )
    rn = F.col("_raw_name")
    is_mbean = F.coalesce(F.contains(rn, F.lit("=")), F.lit(False))
    props = F.substring(rn, F.instr(rn, ":") + 1, F.lit(_MAX))
    pairs = F.split(props, ",", -1)
    pk = F.transform(pairs, lambda p: F.substring_index(p, "=", 1))
    pv = F.transform(pairs, lambda p: F.substring(p, F.instr(p, "=") + 1, F.lit(_MAX)))
    d = c.select("*", F.when(is_mbean, pk).alias("_pk"), F.when(is_mbean, pv).alias("_pv"))
    pk, pv = F.col("_pk"), F.col("_pv")
    idx = F.filter(F.sequence(F.lit(0), F.size(pk) - 1), lambda i: ~F.get(pk, i).isin("type", "name"))
    keys = F.concat(F.when(is_mbean, F.transform(idx, lambda i: F.get(pk, i))).otherwise(_empty()), F.col("_xk"))
    vals = F.concat(F.when(is_mbean, F.transform(idx, lambda i: F.get(pv, i))).otherwise(_empty()), F.col("_xv"))
    e = d.select("*", keys.alias("_keys"), vals.alias("_vals"))
    keys, vals = F.col("_keys"), F.col("_vals")
    dup = F.size(F.array_distinct(keys)) != F.size(keys)
    attribute = F.col("_attribute")

    # --- MBean names
    domain = F.substring_index(rn, ":", 1)
    mtype = _lookup(pk, pv, "type")
    mname = _lookup(pk, pv, "name")
    ye = F.when(mname.isNotNull() & mtype.isNotNull(),
                F.try_element_at(keys_map, compact_col(F.concat(domain, mtype, mname))))
    ke = F.when(attribute.isNotNull() & mtype.isNotNull(),
                F.try_element_at(keys_map, compact_col(F.concat(domain, mtype, attribute))))
    family = F.concat(domain, F.lit(":type="), mtype)
    is_fam = attribute.isNotNull() & family.isin(*[fam for _, fam in N.FAMILIES])
    default_attr = _lit_map(N.KIND_DEFAULT_ATTRIBUTE)
    m_signal = (F.when(ye.isNotNull(), _entry_part(ye, 0)).when(ke.isNotNull(), _entry_part(ke, 0))
                .when(is_fam, camel_col(attribute)).otherwise(F.coalesce(mname, attribute, rn)))
    m_mbean = (F.when(ye.isNotNull(), _entry_part(ye, 1)).when(ke.isNotNull(), _entry_part(ke, 1))
               .when(is_fam, family).when(mname.isNull(), family)
               .otherwise(F.concat(family, F.lit(",name="), mname)))
    m_attr = (F.when(ye.isNotNull(), F.coalesce(attribute, F.try_element_at(default_attr, _entry_part(ye, 2))))
              .when(ke.isNotNull() | is_fam, F.lit("Value")).otherwise(F.coalesce(attribute, F.lit("Value"))))

    # --- Prometheus names
    n = F.lower(rn)
    exact = F.try_element_at(_lit_map({k: "|".join(v) for k, v in N.EXACT.items()}), n)
    t = F.when(F.endswith(n, F.lit("_total")), F.substring(n, F.lit(1), F.length(n) - 6)).otherwise(n)
    suffix = F.substring_index(t, "_", -1)
    suffix_attr = F.when(F.contains(t, F.lit("_")), F.try_element_at(_lit_map(N.ATTRIBUTE_SUFFIXES), suffix))
    base = F.substring(t, F.lit(1), F.length(t) - F.length(suffix) - 1)
    e1 = F.try_element_at(keys_map, compact_col(n))
    e12 = F.coalesce(e1, F.try_element_at(keys_map, compact_col(t)))
    e3 = F.when(suffix_attr.isNotNull(), F.try_element_at(keys_map, compact_col(base)))
    q = _lookup(keys, vals, "quantile")
    frac = F.substring_index(q, ".", -1)
    pct = F.when(F.startswith(q, F.lit("0.")),
                 F.concat(F.when(F.length(frac) >= 2, frac).otherwise(F.concat(frac, F.lit("0"))),
                          F.lit("thPercentile")))
    fam_signal = None
    fam_mbean = None
    for prefix, fam in N.FAMILIES:
        cond = F.startswith(n, F.lit(prefix))
        sig = camel_col(F.substring(n, len(prefix) + 1, _MAX))
        fam_signal = F.when(cond, sig) if fam_signal is None else fam_signal.when(cond, sig)
        fam_mbean = F.when(cond, F.lit(fam)) if fam_mbean is None else fam_mbean.when(cond, F.lit(fam))
    assert fam_signal is not None
    assert fam_mbean is not None
    p_signal = (F.when(exact.isNotNull(), _entry_part(exact, 0)).when(e12.isNotNull(), _entry_part(e12, 0))
                .when(e3.isNotNull(), _entry_part(e3, 0)).otherwise(F.coalesce(fam_signal, rn)))
    p_mbean = (F.when(exact.isNotNull(), _entry_part(e1, 1)).when(e12.isNotNull(), _entry_part(e12, 1))
               .when(e3.isNotNull(), _entry_part(e3, 1)).otherwise(fam_mbean))
    p_attr = (F.when(exact.isNotNull(), _entry_part(exact, 1))
              .when(e12.isNotNull(), F.coalesce(pct, F.try_element_at(default_attr, _entry_part(e12, 2))))
              .when(e3.isNotNull(), suffix_attr).otherwise(F.lit("Value")))

    value = typed(F.col("_value_text"), "double")
    ts_text = F.col("_ts_text")
    has_ts = ts_text.isNotNull() & (ts_text != F.lit(""))
    ms = ts_text.try_cast("bigint")
    ts_val = F.when(has_ts & (ms >= F.lit(0)) & (ms <= F.lit(MAX_EPOCH_MS)), F.timestamp_millis(ms))
    R = S.REASONS
    s = F.col("_s")
    route_reason = (
        F.when(F.col("_fmt") == F.lit(S.SOURCE_ERROR_FORMAT),
               F.array(F.lit("rejected"), F.substring_index(F.coalesce(F.col("line"), F.lit("")), "\n", 1)))
        .when(s == F.lit(""), F.array(F.lit("unused"), F.lit(R["blank"])))
        .when(F.startswith(s, F.lit("#")), F.array(F.lit("unused"), F.lit(R["comment"])))
        .when((F.col("_fmt") == "json") & ~F.startswith(s, F.lit("{")),
              F.array(F.lit("rejected"), F.lit(R["not_object"])))
        .when(F.col("_json_bad"), F.array(F.lit("rejected"), F.lit(R["bad_json"])))
        .when((F.col("_fmt") == "json") & rn.isNull(), F.array(F.lit("rejected"), F.lit(R["no_name"])))
        .when((F.col("_fmt") == "json") & F.col("_value_text").isNull(),
              F.array(F.lit("unused"), F.lit(R["null_value"])))
        .when((F.col("_fmt") != "json") & ~F.col("_prom_ok"), F.array(F.lit("rejected"), F.lit(R["not_prom"])))
        .when(dup, F.array(F.lit("rejected"), F.lit(R["dup_label"])))
        .when(value.isNull(), F.array(F.lit("rejected"), F.lit(R["not_number"])))
        .when(F.isnan(value), F.array(F.lit("unused"), F.lit(R["nan_value"])))
        .when(has_ts & ts_val.isNull(), F.array(F.lit("rejected"), F.lit(R["bad_ts"])))
        .otherwise(F.array(F.lit("sample"), F.lit(None).cast("string")))
    )
    labels = F.when(~dup, F.map_from_arrays(keys, vals))
    proc = F.coalesce(*[F.try_element_at(labels, F.lit(k)) for k in S.PROCESSOR_LABELS])
    sample = F.struct(
        F.col("_broker_id").alias("broker_id"),
        F.when(has_ts, ts_val).otherwise(F.col("ingest_ts")).alias("ts"),
        F.when(is_mbean, m_signal).otherwise(p_signal).alias("signal"),
        F.when(is_mbean, m_mbean).otherwise(p_mbean).alias("mbean"),
        F.when(is_mbean, m_attr).otherwise(p_attr).alias("attribute"),
        F.coalesce(*[F.try_element_at(labels, F.lit(k)) for k in S.LISTENER_LABELS]).alias("listener"),
        F.coalesce(*[F.try_element_at(labels, F.lit(k)) for k in S.REQUEST_LABELS]).alias("request"),
        proc.alias("processor"),
        F.map_filter(labels, lambda k, v: ~k.isin(*S.ROLE_LABELS)).alias("labels"),
        value.alias("value"),
        rn.alias("raw_name"),
        F.col("_fmt").alias("metric_format"),
    )
    return e.select(
        *[F.col(col) for col in RAW_METRICS.names],
        route_reason.alias("_rr"),
        sample.alias("_m"),
    ).select("*", F.get(F.col("_rr"), 0).alias("_route"), F.get(F.col("_rr"), 1).alias("_reason")).drop("_rr")


def route_metric_outputs(routed: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(samples, rejected, unused) in their tables' column order."""
    samples = routed.where(F.col("_route") == "sample").select(
        *[
            F.col(c) if c in ("cluster", *_PROV) else utc_date(F.col("_m.ts")).alias("date") if c == "date"
            else F.col(f"_m.{c}").alias(c)
            for c in METRIC_SAMPLES.names
        ]
    )
    rejected = routed.where(F.col("_route") == "rejected").select(
        F.col("cluster"),
        F.col("broker_id"),
        F.lit("metric_samples").alias("target_table"),
        F.when(F.col("metric_format") == F.lit(S.SOURCE_ERROR_FORMAT), F.lit(S.SOURCE_STAGE))
        .otherwise(F.lit("parse")).alias("stage"),
        F.col("_reason").alias("reason"),
        F.substring(F.col("line"), 1, QUARANTINE_RECORD_CHARS).alias("record"),
        *[F.col(c) for c in _PROV],
        F.col("date"),
    )
    unused = routed.where(F.col("_route") == "unused").select(
        *[F.col(c) for c in RAW_METRICS.names], F.col("_reason").alias("reason")
    )
    return samples, rejected, unused
