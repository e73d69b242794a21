"""The metric parser in pure Python, step for step what :mod:`pipelines.parsing.spark_metrics` computes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pipelines.parsing import metric_names as N
from pipelines.parsing import metric_spec as S
from pipelines.parsing.compiler import python_regex
from pipelines.parsing.pylogs import _json_leaf
from pipelines.parsing.stages import py_double, py_int, py_ts_from_ms
from schemas.tables import METRIC_SAMPLES, QUARANTINE_RECORD_CHARS

__all__ = ["camel", "parse_metric", "percentile", "resolve_mbean", "resolve_prometheus"]

Row = dict[str, Any]
_PROV = ("source", "source_offset", "ingest_ts", "batch_id")
_LABEL = re.compile(S.LABEL_RX, re.ASCII | re.DOTALL)


def camel(text: str) -> str:
    """connection-count / connection_count -> ConnectionCount (Spark: initcap over words, spaces removed)."""
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
        e = _entry(N.compact(n))
        return signal, None if e is None else e[1], attribute
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


def _labels_out(
    keys: list[str], vals: list[str | None]
) -> tuple[dict[str, str | None], str | None, str | None, str | None]:
    d = dict(zip(keys, vals, strict=True))

    def first(names: tuple[str, ...]) -> str | None:
        return next((d[k] for k in names if d.get(k) is not None), None)

    listener, request, processor = first(S.LISTENER_LABELS), first(S.REQUEST_LABELS), first(S.PROCESSOR_LABELS)
    return {k: v for k, v in d.items() if k not in S.ROLE_LABELS}, listener, request, processor


def _reject(rec: Mapping[str, Any], reason: str, stage: str = "parse") -> tuple[str, Row]:
    line = rec.get("line")
    return "rejected", {
        "cluster": rec.get("cluster"), "broker_id": rec.get("broker_id"), "target_table": "metric_samples",
        "stage": stage, "reason": reason, "record": None if line is None else line[:QUARANTINE_RECORD_CHARS],
        **{c: rec.get(c) for c in _PROV}, "date": rec.get("date"),
    }


def _unused(rec: Mapping[str, Any], reason: str) -> tuple[str, Row]:
    out = {c: rec.get(c) for c in ("cluster", "broker_id", "metric_format", "line", "line_bytes", *_PROV, "date")}
    out["reason"] = reason
    return "unused", out


def parse_metric(rec: Mapping[str, Any]) -> tuple[str, Row]:
    """One RAW_METRICS row -> ("sample" | "rejected" | "unused", row)."""
    R = S.REASONS
    if rec.get("metric_format") == S.SOURCE_ERROR_FORMAT:
        return _reject(rec, (rec.get("line") or "").split("\n", 1)[0], S.SOURCE_STAGE)
    s = (rec.get("line") or "").strip(S.TRIM)
    if s == "":
        return _unused(rec, R["blank"])
    if s.startswith("#"):
        return _unused(rec, R["comment"])
    fmt = rec.get("metric_format") or ("json" if s.startswith(("{", "[")) else "prometheus")
    broker_id = rec.get("broker_id")
    if fmt == "json":
        if not s.startswith("{"):
            return _reject(rec, R["not_object"])
        try:
            obj = json.loads(s, parse_int=str, parse_float=str, parse_constant=str)
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or any(
            obj.get(k) is not None and not isinstance(obj.get(k), dict) for k in ("tags", "labels")
        ):
            return _reject(rec, R["bad_json"])
        get = {k: _json_leaf(obj.get(k)) for k in ("ts", "timestamp", "broker_id", "mbean", "name", "metric",
                                                    "attribute", "value")}
        raw_name = next((get[k] for k in ("mbean", "name", "metric") if get[k] is not None), None)
        value_text = get["value"]
        ts_text = get["ts"] if get["ts"] is not None else get["timestamp"]
        jb = py_int(get["broker_id"], 32)
        broker_id = jb if jb is not None else broker_id
        tags_obj = obj.get("tags") if obj.get("tags") is not None else obj.get("labels")
        jtags: list[tuple[str, str | None]] = [(k, _json_leaf(v)) for k, v in (tags_obj or {}).items()]
        attribute = get["attribute"]
        if raw_name is None:
            return _reject(rec, R["no_name"])
        if value_text is None:
            return _unused(rec, R["null_value"])
    else:
        m = python_regex(S.PROM_LINE).match(s)
        if m is None:
            return _reject(rec, R["not_prom"])
        raw_name, value_text, ts_text = m.group("name"), m.group("value"), m.group("ts")
        jtags = [(k, v) for k, v in _LABEL.findall(m.group("labels") or "")]
        attribute = None
    is_mbean = "=" in raw_name
    tags: list[tuple[str, str | None]] = list(resolve_mbean(raw_name, attribute)[3]) if is_mbean else []
    keys = [k for k, _ in tags] + [k for k, _ in jtags]
    vals = [v for _, v in tags] + [v for _, v in jtags]
    if len(set(keys)) != len(keys):
        return _reject(rec, R["dup_label"])
    mbean: str | None
    if is_mbean:
        signal, mbean, attr, _ = resolve_mbean(raw_name, attribute)
    else:
        signal, mbean, attr = resolve_prometheus(raw_name, dict(zip(keys, vals, strict=True)))
    value = py_double(value_text)
    if value is None:
        return _reject(rec, R["not_number"])
    if math.isnan(value):
        return _unused(rec, R["nan_value"])
    if ts_text is not None and ts_text != "":
        ts = py_ts_from_ms(py_int(ts_text, 64))
        if ts is None:
            return _reject(rec, R["bad_ts"])
    else:
        ts = rec.get("ingest_ts")
    labels, listener, request, processor = _labels_out(keys, vals)
    row: Row = {
        "cluster": rec.get("cluster"), "broker_id": broker_id, "ts": ts, "signal": signal,
        "mbean": mbean, "attribute": attr, "listener": listener, "request": request,
        "processor": processor, "labels": labels, "value": value, "raw_name": raw_name, "metric_format": fmt,
        **{c: rec.get(c) for c in _PROV}, "date": None if ts is None else ts.date(),
    }
    assert list(row) == METRIC_SAMPLES.names
    return "sample", row
