"""The log parser as Spark Column expressions (built-in functions only, no Python UDF).

Cost per line, by design: one regex for the layout (plus the prefix regex only for lines that do not start with
`[`), one for the log ident when there is one, literal prefix tests to classify the message, then exactly one message
regex (CASE WHEN evaluates only its taken branch). Every regex fills all its columns at once
(:mod:`pipelines.parsing.compiler`), and each stage is its own projection so Spark computes it once per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from pipelines.parsing import patterns as P
from pipelines.parsing.compiler import MARK, SEP, Compiled, SlotLayout
from pipelines.parsing.stages import API_BY_KEY, API_ID, LOG_STAGES, REQUEST_PREFIX
from schemas.tables import QUARANTINE_RECORD_CHARS, RAW_LOGS, REQUEST_EVENTS, STATE_CHANGE_EVENTS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ROUTES", "api_name_col", "parse_logs_routed", "route_outputs", "ts_col", "utc_date"]

ROUTES = ("state_change", "request", "rejected", "unused")
_MAX = 2**31 - 1
_INT_TYPES = {"int": "int", "long": "bigint"}


def apply(col: Column, comp: Compiled) -> Column:
    """regexp_replace with the stage template: MARK + slots on a match, the input unchanged otherwise."""
    return F.regexp_replace(col, comp.java, comp.template)


def matched(parts: Column, n_slots: int, arr: Column | None = None) -> Column:
    """Did the regex match (and did the captured text keep the slot count)? `arr`: the parts already split."""
    return F.startswith(parts, F.lit(MARK)) & (F.size(_slots(parts) if arr is None else arr) == F.lit(n_slots))


def _slots(parts: Column) -> Column:
    return F.split(F.substring(parts, 2, _MAX), SEP, -1)


def slot(arr: Column, i: int) -> Column:
    return F.nullif(F.get(arr, i), F.lit(""))


def field(arr: Column, layout: SlotLayout, column: str) -> Column:
    """The first non-empty slot feeding `column`."""
    cols = [slot(arr, i) for i in layout.index(column)]
    return cols[0] if len(cols) == 1 else F.coalesce(*cols)


def typed(col: Column, type_: str) -> Column:
    if type_ in _INT_TYPES:
        return col.try_cast(_INT_TYPES[type_])
    if type_ == "double":
        return F.when(col.rlike(P.NUMERIC + P.END), col.try_cast("double"))
    return col


def ts_col(text: Column, tz: str) -> Column:
    """log4j timestamp text -> timestamp (an instant), read in zone `tz` whatever the session time zone.

    Spark's string->timestamp cast is a hand-written parser, several times cheaper than a DateTimeFormatter pattern;
    with a `Z` suffix it reads UTC without a zone lookup (a zone id suffix such as ` Europe/Berlin` costs a lookup per
    row, so it is used only for other zones). The shape test (positions of the separators, a leading digit, length
    19 or 23: `yyyy-MM-dd HH:mm:ss[.SSS]`) keeps the cast from accepting looser forms the Python engine rejects, and
    costs no regex."""
    norm = F.translate(text, "/T,", "- .")
    n = F.length(norm)

    def at(i: int, ch: str) -> Column:
        return F.substring(norm, i, 1) == F.lit(ch)

    shape = (
        ((n == 19) | ((n == 23) & at(20, ".")))
        & at(5, "-") & at(8, "-") & at(11, " ") & at(14, ":") & at(17, ":")
        & (F.substring(norm, 1, 1) >= F.lit("0")) & (F.substring(norm, 1, 1) <= F.lit("9"))
    )
    suffix = "Z" if tz == "UTC" else " " + tz
    return F.when(shape, F.concat(norm, F.lit(suffix)).try_cast("timestamp"))


def utc_date(ts: Column) -> Column:
    """The UTC calendar day of a timestamp, whatever the session time zone."""
    return F.date_from_unix_date(F.floor(F.unix_micros(ts) / F.lit(86_400_000_000)).cast("int"))


def api_name_col(text: Column) -> Column:
    """LEADER_AND_ISR / "update metadata" -> LeaderAndIsr / UpdateMetadata (unknown spellings kept)."""
    # a canonical name maps to itself: one hash lookup, no lower() (which goes through ICU case mapping)
    canonical = F.create_map(*[F.lit(x) for name in API_BY_KEY.values() for x in (name, name)])
    lookup = F.create_map(*[F.lit(x) for kv in API_BY_KEY.items() for x in kv])
    return F.coalesce(
        F.try_element_at(canonical, text), F.try_element_at(lookup, F.lower(F.translate(text, "_ ", ""))), text
    )


def _api_id_col(name: Column) -> Column:
    lookup = F.create_map(*[F.lit(x) for kv in API_ID.items() for x in kv])
    return F.try_element_at(lookup, name)


def _request_json_schema() -> str:
    groups: dict[str, set[str]] = {}
    top: set[str] = set()
    for paths in P.REQUEST_JSON_FIELDS.values():
        for path in paths:
            if len(path) == 1:
                top.add(path[0])
            else:
                groups.setdefault(path[0], set()).add(path[1])
    parts = [f"`{g}` STRUCT<{', '.join(f'`{k}`: STRING' for k in sorted(ks))}>" for g, ks in sorted(groups.items())]
    parts += [f"`{k}` STRING" for k in sorted(top)]
    return ", ".join(parts)


# Projections kept per (JVM, zone): building them costs thousands of py4j calls (seconds per micro-batch on a busy
# 2-core driver); Column expressions are unresolved trees, valid for any DataFrame of the same JVM. A process uses one
# or two zones; the bound only keeps a pathological caller from growing the cache.
_MAX_CACHED_PROJECTIONS = 16
_Step = tuple[tuple["Column | str", ...], tuple[str, ...]]  # (columns selected, columns dropped afterwards)
_PROJECTIONS: dict[tuple[int, str], tuple[_Step, ...]] = {}


def parse_logs_routed(raw: DataFrame, cluster_tz: str = "UTC") -> DataFrame:
    """raw (RAW_LOGS columns) -> one wide row per line with `_route` (ROUTES), `_reason` and every output column."""
    key = (id(raw.sparkSession.sparkContext._jvm), cluster_tz)
    steps = _PROJECTIONS.get(key)
    if steps is None:
        if len(_PROJECTIONS) >= _MAX_CACHED_PROJECTIONS:
            _PROJECTIONS.clear()
        steps = _PROJECTIONS[key] = _projections(cluster_tz)
    df = raw
    for cols, drop in steps:
        df = df.select(*cols)
        if drop:
            df = df.drop(*drop)
    return df


def _layout(text: Column) -> Column:
    """The layout template of one line: the Apache regex alone on lines starting with `[` (no other alternative can
    match them, and no prefix is stripped from them), else the prefix stripped and the whole layout regex."""
    st = LOG_STAGES
    return F.when(F.startswith(text, F.lit("[")), apply(text, st.layout_apache)).otherwise(
        apply(F.regexp_replace(text, st.prefix_java, ""), st.layout)
    )


def _projections(cluster_tz: str) -> tuple[_Step, ...]:
    st = LOG_STAGES
    line = F.coalesce(F.col("line"), F.lit(""))
    nl = F.instr(line, "\n")
    first_raw = F.substring_index(line, "\n", 1)
    # a CRLF file leaves a `\r` at the end of the line: not part of the layout
    first = F.when(
        F.endswith(first_raw, F.lit("\r")), first_raw.substr(F.lit(1), F.length(first_raw) - 1)
    ).otherwise(first_raw)
    a = (
        "*",
        (nl > 0).alias("_has_nl"),
        F.when(nl > 0, F.substring(line, nl, _MAX)).otherwise(F.lit("")).alias("_tail"),
        _layout(first).alias("_lp1"),
    )
    n_layout = len(st.layout_slots.slots)
    wrapped = F.col("_has_nl") & ~matched(F.col("_lp1"), n_layout)
    b = (
        "*",
        wrapped.alias("_wrapped"),
        F.when(wrapped, _layout(F.translate(line, "\n\r", ""))).otherwise(F.col("_lp1")).alias("_lp"),
    )
    # each split array is its own column, computed once per row and then indexed many times
    b2 = ("*", _slots(F.col("_lp")).alias("_la"))
    la = F.col("_la")
    lf = {c: field(la, st.layout_slots, c) for c in P.LAYOUT_FIELDS}
    c = (
        "*",
        matched(F.col("_lp"), n_layout, la).alias("_layout_ok"),
        lf["ts"].alias("_ts_text"),
        lf["level"].alias("level"),
        lf["logger"].alias("logger"),
        lf["ident"].alias("_ident"),
        lf["body"].alias("_body"),
    )
    body = F.col("_body")
    ident = F.col("_ident")
    is_req = F.col("_layout_ok") & F.startswith(body, F.lit(REQUEST_PREFIX))
    req_rest = F.ltrim(F.substring(body, len(REQUEST_PREFIX) + 1, _MAX))
    is_json = is_req & F.startswith(req_rest, F.lit("{"))
    # the classifier: literal tests only; the taken branch runs its one regex (a line without a layout has no body)
    msg_case = None
    for m, comp in zip(P.MESSAGES, st.messages, strict=True):
        conds = []
        if m.prefix:
            conds.append(F.startswith(body, F.lit(m.prefix)))
        if m.contains:
            conds.append(F.contains(body, F.lit(m.contains)))
        cond = conds[0] if len(conds) == 1 else conds[0] & conds[1]
        msg_case = F.when(cond, apply(body, comp)) if msg_case is None else msg_case.when(cond, apply(body, comp))
    assert msg_case is not None
    d = (
        "*",
        ts_col(F.col("_ts_text"), cluster_tz).alias("ts"),
        F.when(ident.isNotNull(), apply(ident, st.ident)).alias("_ip"),
        F.when(F.col("_layout_ok") & ~is_req, msg_case).alias("_mp"),
        F.when(is_req & ~is_json, apply(body, st.request_text)).alias("_rp"),
        F.when(is_json, F.from_json(req_rest, _request_json_schema())).alias("_rj"),
    )
    d2 = (
        "*",
        _slots(F.col("_ip")).alias("_ia"),
        _slots(F.col("_mp")).alias("_ma"),
        _slots(F.col("_rp")).alias("_ra"),
    )
    return (
        (a, ()),
        (b, ("_lp1",)),
        (b2, ()),
        (c, ("_lp", "_la")),
        (d, ()),
        (d2, ()),
        (_finish(), ()),
    )


def _finish() -> tuple[Column, ...]:
    st = LOG_STAGES
    ia = F.col("_ia")
    idf = {c: field(ia, st.ident_slots, c) for c in P.IDENT_FIELDS}
    n_msg = len(st.message_slots.slots)
    ma = F.col("_ma")
    msg_ok = F.coalesce(matched(F.col("_mp"), n_msg, ma), F.lit(False))
    mf = {c: field(ma, st.message_slots, c) for c in P.BODY_FIELDS}
    types = {c.name: c.type for c in STATE_CHANGE_EVENTS.columns}
    m = {c: F.when(msg_ok, typed(mf[c], types.get(c, "string"))) for c in P.BODY_FIELDS}
    ityped = {c: typed(idf[c], types.get(c, "string")) for c in P.IDENT_FIELDS}

    def count(text: Column, token: str, plus: int) -> Column:
        n = (F.length(text) - F.length(F.replace(text, F.lit(token), F.lit("")))) / F.lit(len(token))
        return (n + F.lit(plus)).cast("int")

    partitions = F.coalesce(
        m["partitions"],
        F.when(msg_ok, count(mf["count_arrows"], "->", 0)),
        F.when(msg_ok, count(mf["count_csv"], ",", 1)),
        F.try_add(m["become_leader"], m["become_follower"]),
    )
    sc = {
        "broker_id": F.coalesce(ityped["broker_id"], ityped["controller_id"], F.col("broker_id")),
        "level": F.col("level"),
        "logger": F.col("logger"),
        "role": m["role"],
        "event": m["event"],
        "request": F.when(msg_ok, api_name_col(mf["request"])),
        "controller_id": F.coalesce(m["controller_id"], ityped["controller_id"]),
        "controller_epoch": F.coalesce(m["controller_epoch"], ityped["controller_epoch"]),
        "target_brokers": F.when(msg_ok, F.replace(mf["target_brokers"], F.lit(" "), F.lit(""))),
        "partitions": partitions,
        "topic": F.coalesce(m["topic"], ityped["topic"]),
        "partition": F.coalesce(m["partition"], ityped["partition"]),
        "leader": F.coalesce(m["leader"], ityped["leader"]),
        "message": F.concat(F.col("_body"), F.when(F.col("_wrapped"), F.lit("")).otherwise(F.col("_tail"))),
    }
    for name in ("correlation_id", "target_broker_id", "elapsed_ms", "leader_epoch", "become_leader",
                 "become_follower", "broker_epoch", "current_broker_epoch", "lock_wait_ms", "offset", "kafka_format"):
        sc[name] = m[name]
    # request log
    ra = F.col("_ra")
    req_ok = F.coalesce(matched(F.col("_rp"), len(st.request_slots.slots), ra), F.lit(False))
    rtypes = {c.name: c.type for c in REQUEST_EVENTS.columns}
    rq: dict[str, Column] = {}
    for name in P.REQUEST_TEXT_FIELDS:
        txt = F.when(req_ok, field(ra, st.request_slots, name))
        js = None
        if name in P.REQUEST_JSON_FIELDS:
            js = F.coalesce(*[F.col("_rj")[p[0]] if len(p) == 1 else F.col("_rj")[p[0]][p[1]]
                              for p in P.REQUEST_JSON_FIELDS[name]])
        rq[name] = typed(F.coalesce(txt, js) if js is not None else txt, rtypes.get(name, "string"))
    rq["api_name"] = api_name_col(rq.pop("api"))
    json_key = typed(F.col("_rj")["requestHeader"]["requestApiKey"], "int")
    rq["api_key"] = F.coalesce(json_key, _api_id_col(rq["api_name"]))
    rq["log_format"] = F.when(F.col("_rj").isNotNull(), F.lit("json")).otherwise(F.lit("text"))
    rq["broker_id"] = F.col("broker_id")
    req_valid = rq["api_name"].isNotNull() & rq["correlation_id"].isNotNull()

    is_req_line = F.col("_layout_ok") & F.startswith(F.col("_body"), F.lit(REQUEST_PREFIX))
    route = (
        F.when(~F.col("_layout_ok"), F.lit("rejected"))
        .when(F.col("ts").isNull(), F.lit("rejected"))
        .when(is_req_line & req_valid, F.lit("request"))
        .when(is_req_line, F.lit("rejected"))
        .when(msg_ok, F.lit("state_change"))
        .otherwise(F.lit("unused"))
    )
    reason = (
        F.when(~F.col("_layout_ok"), F.lit("no recognisable log4j layout"))
        .when(F.col("ts").isNull(), F.concat(F.lit("unparseable timestamp: "), F.col("_ts_text")))
        .when(is_req_line & req_valid, F.lit(None).cast("string"))
        .when(is_req_line, F.lit("malformed request-log entry"))
        .when(msg_ok, F.lit(None).cast("string"))
        .when(F.col("_mp").isNotNull(), F.lit("message text not recognised"))
        .otherwise(F.lit("no planewatch event for this message"))
    )
    target = F.when(is_req_line | (F.col("log_kind") == F.lit("request")), F.lit("request_events")).otherwise(
        F.lit("state_change_events")
    )
    return (
        *[F.col(c) for c in RAW_LOGS.names if c not in ("broker_id", "date")],
        F.col("broker_id").alias("_raw_broker_id"),
        F.col("date").alias("_raw_date"),
        F.col("ts"),
        route.alias("_route"),
        reason.alias("_reason"),
        target.alias("_target"),
        # each struct is only read on its own route: built only where it can be
        F.when(msg_ok, F.struct(*[v.alias(k) for k, v in sc.items()])).alias("_sc"),
        F.when(is_req_line, F.struct(*[v.alias(k) for k, v in rq.items()])).alias("_rq"),
    )


def route_outputs(routed: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame, DataFrame]:
    """(state_change, requests, rejected, unused) in their tables' column order."""
    event_date = utc_date(F.col("ts"))
    prov = ["source", "source_offset", "ingest_ts", "batch_id"]

    def pick(struct: str, table_cols: list[str], types: dict[str, str]) -> list[Column]:
        cols = []
        for name in table_cols:
            if name in ("cluster", "ts", *prov):
                cols.append(F.col(name))
            elif name == "date":
                cols.append(event_date.alias("date"))
            else:
                cols.append(F.col(f"{struct}.{name}").cast(_spark_type(types[name])).alias(name))
        return cols

    sc_types = {c.name: c.type for c in STATE_CHANGE_EVENTS.columns}
    rq_types = {c.name: c.type for c in REQUEST_EVENTS.columns}
    state = routed.where(F.col("_route") == "state_change").select(*pick("_sc", STATE_CHANGE_EVENTS.names, sc_types))
    requests = routed.where(F.col("_route") == "request").select(*pick("_rq", REQUEST_EVENTS.names, rq_types))
    rejected = routed.where(F.col("_route") == "rejected").select(
        F.col("cluster"),
        F.col("_raw_broker_id").alias("broker_id"),
        F.col("_target").alias("target_table"),
        F.lit("parse").alias("stage"),
        F.col("_reason").alias("reason"),
        F.substring(F.col("line"), 1, QUARANTINE_RECORD_CHARS).alias("record"),
        *[F.col(c) for c in prov],
        F.col("_raw_date").alias("date"),
    )
    unused = routed.where(F.col("_route") == "unused").select(
        *[
            F.col("_raw_broker_id").alias(c) if c == "broker_id" else F.col("_raw_date").alias(c) if c == "date"
            else F.col(c)
            for c in RAW_LOGS.names
        ],
        F.col("_reason").alias("reason"),
    )
    return state, requests, rejected, unused


def _spark_type(t: str) -> str:
    return {"string": "string", "int": "int", "long": "bigint", "double": "double", "timestamp": "timestamp",
            "date": "date", "boolean": "boolean"}.get(t, "string")
