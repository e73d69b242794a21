"""The log parser: bronze ``raw_logs`` rows -> one routed row per record, as polars expressions over the whole batch.

Theory of operation (polars runs the Rust regex crate, see :mod:`pipelines.parsing.rust_regex`):

1. The record's first line (a record may hold continuation lines: a stack trace) is matched against the layouts of
   :mod:`pipelines.parsing.patterns`. The common case, an Apache-layout line (``[ts] LEVEL [ident] body (logger)``),
   takes a fast path with the same result as the whole LAYOUT_APACHE regex (:func:`_apache_fast`): its head and its
   tail are matched alone (both short, one anchored at the start, the other at the end), the ident is cut from the
   text between them. Only the records the fast path does not match (a few in a real log) go through the declared
   regexes: the Apache layout on lines starting with ``[``, every layout behind zero or more shipper prefixes on the
   others; a record with continuation lines that matches nothing is a hard-wrapped line, matched again with its line
   breaks removed; a record still without a layout is searched for an Apache line anywhere in it (FOREIGN_APACHE).
2. The timestamp text becomes a UTC instant (read in the cluster's zone); an impossible date rejects the record.
3. ``Completed request:`` bodies are request-log entries (text or KIP-673 JSON); every other body goes through the
   message classifier: literal prefix/contains tests pick ONE message pattern per row.
4. The rows are then split by what they are (one message pattern, a request-log entry, none of these) and each group
   gets only its own work: its one pattern's regex, its captures as typed columns (``""`` counts as not captured),
   its route (:data:`ROUTES`) and reason. No row pays for the columns of a pattern it does not have, and a batch
   without request-log lines runs none of their JSON paths. The groups are put back in input order.

The result is one wide frame; :mod:`pipelines.parsing.engine` selects each table's columns from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import polars as pl

from pipelines.parsing import patterns as P
from pipelines.parsing.rust_regex import to_rust
from pipelines.parsing.stages import API_BY_KEY, API_ID, REQUEST_PREFIX, typed
from schemas.inputs import LogKind
from schemas.routes import SOURCE_ERROR_FORMAT
from schemas.tables import REQUEST_EVENTS, STATE_CHANGE_EVENTS

__all__ = ["ROUTES", "parse_logs", "ts_expr"]

ROUTES = ("state_change", "request", "rejected", "unused")
# The reason of every line of a JVM GC log (LogKind.GC): written by Kafka's scripts on purpose, so recognised and
# counted as unused, never quarantined.
GC_LOG_UNUSED = "JVM GC log: recognised, not used"
# A line of a Java stack trace on its own: a shipper that sends each physical line as a record (rsyslog's imfile
# without startmsg.regex, whose offsets are then the records' own) sends a multi-line record's lines apart. The file
# source joins them to their record; alone, they are recognised and unused, never quarantined.
CONTINUATION_UNUSED = "a continuation line of a multi-line log record (a stack trace), shipped on its own"
CONTINUATION = (r"^(?:\s+\S|Caused by: |Suppressed: |\.\.\. [0-9]+ more|"
                r"[A-Za-z_$][\w$]*(?:\.[\w$]+)+(?:Exception|Error|Throwable)(?::|$))")
# Marks a match: an empty group at the start of a pattern is "" when the pattern matched and null when it did not.
_OK = "_ok"
_SC_TYPES = {c.name: c.type for c in STATE_CHANGE_EVENTS.columns}
_RQ_TYPES = {c.name: c.type for c in REQUEST_EVENTS.columns}


def _field_of(group: str) -> str:
    return group.split("__", 1)[0]


def _groups(regex: str) -> list[str]:
    """Named groups of a declared regex, in group-number order."""
    return [name for name, _ in sorted(re.compile(regex).groupindex.items(), key=lambda kv: kv[1])]


@dataclass(frozen=True)
class _Pattern:
    """One declared regex in polars' dialect, with a match marker, and which groups feed which column."""

    rust: str
    columns: dict[str, tuple[str, ...]]  # column -> groups feeding it, first non-empty wins
    consts: dict[str, str]


def _pattern(regex: str, anchor_start: bool = True, consts: dict[str, str] | None = None) -> _Pattern:
    body = regex[1:] if regex.startswith("^") else regex
    rust = to_rust(("^" if anchor_start else "") + f"(?P<{_OK}>)" + body)
    cols: dict[str, list[str]] = {}
    for g in _groups(regex):
        cols.setdefault(_field_of(g), []).append(g)
    return _Pattern(rust, {c: tuple(gs) for c, gs in cols.items()}, consts or {})


@dataclass(frozen=True)
class _Stages:
    apache: _Pattern
    prefixed: _Pattern
    foreign: _Pattern
    ident: _Pattern
    messages: tuple[_Pattern, ...]
    request_text: _Pattern


@cache
def _stages() -> _Stages:
    # A message column a pattern does not capture takes the pattern's constant (event, role, ...); a column it
    # captures keeps the capture, its constant only where the pattern captures fewer groups than the most any
    # pattern captures for that column (the declaration's slot rule: e.g. `partitions` "1" beside a group).
    need: dict[str, int] = {}
    for m in P.MESSAGES:
        counts: dict[str, int] = {}
        for g in _groups(m.regex):
            counts[_field_of(g)] = counts.get(_field_of(g), 0) + 1
        for c, n in counts.items():
            need[c] = max(need.get(c, 1), n)
    messages = []
    for m in P.MESSAGES:
        pat = _pattern(m.regex)
        consts = {"event": m.event, "role": m.role, "kafka_format": m.kafka_format, "request": m.request or "",
                  **m.consts}
        kept = {c: v for c, v in consts.items() if v and len(pat.columns.get(c, ())) < need.get(c, 1)}
        messages.append(_Pattern(pat.rust, pat.columns, kept))
    return _Stages(
        _pattern(P.LAYOUT_APACHE),
        _pattern(P.LAYOUT_PREFIXED),
        _pattern(P.FOREIGN_APACHE, anchor_start=False),
        _pattern(P.IDENT),
        tuple(messages),
        _pattern(P.REQUEST_TEXT),
    )


def _nonempty(e: pl.Expr) -> pl.Expr:
    return pl.when(e != "").then(e)


def _captured(struct: str, pat: _Pattern, column: str) -> pl.Expr | None:
    """The first non-empty capture feeding `column` (then the pattern's constant for it), or None if neither."""
    parts = [_nonempty(pl.col(struct).struct.field(g)) for g in pat.columns.get(column, ())]
    if column in pat.consts:
        parts.append(pl.when(pl.col(struct).struct.field(_OK).is_not_null()).then(pl.lit(pat.consts[column])))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pl.coalesce(parts)


def _coalesce(parts: list[pl.Expr]) -> pl.Expr:
    if not parts:
        return pl.lit(None, pl.String)
    return parts[0] if len(parts) == 1 else pl.coalesce(parts)


def ts_expr(text: pl.Expr, tz: str) -> pl.Expr:
    """log4j timestamp text -> UTC instant (microseconds), read in zone `tz`; null when not a real time.

    `/`, `T` and `,` are normalised to `-`, ` ` and `.`; the text must then be ``yyyy-MM-dd HH:mm:ss[.SSS]``."""
    norm = text.str.replace_many(["/", "T", ","], ["-", " ", "."])
    shape = norm.str.contains(to_rust(P.TS_STRICT))
    long = norm.str.to_datetime("%Y-%m-%d %H:%M:%S%.3f", strict=False, time_unit="us")
    short = norm.str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us")
    naive = pl.when(shape).then(pl.when(norm.str.len_chars() == 23).then(long).otherwise(short))
    if tz == "UTC":
        return naive.dt.replace_time_zone("UTC")
    return naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")


def api_name_expr(text: pl.Expr) -> pl.Expr:
    """LEADER_AND_ISR / "update metadata" / LeaderAndIsr -> LeaderAndIsr; unknown spellings are kept."""
    key = text.str.to_lowercase().str.replace_all("_", "", literal=True).str.replace_all(" ", "", literal=True)
    return pl.coalesce(key.replace_strict(API_BY_KEY, default=None, return_dtype=pl.String), text)


def _layout_step(text: pl.Expr, prefix: str) -> list[pl.Expr]:
    """The layout structs of `text`: Apache alone on `[` lines, the prefixed layouts on the others."""
    st = _stages()
    bracket = text.str.starts_with("[")
    return [
        pl.when(bracket).then(text).str.extract_groups(st.apache.rust).alias(f"{prefix}a"),
        pl.when(~bracket).then(text).str.extract_groups(st.prefixed.rust).alias(f"{prefix}p"),
    ]


def _layout_ok(prefix: str) -> pl.Expr:
    return (pl.col(f"{prefix}a").struct.field(_OK).is_not_null()
            | pl.col(f"{prefix}p").struct.field(_OK).is_not_null())


def _layout_field(column: str) -> pl.Expr:
    st = _stages()
    parts: list[pl.Expr] = []
    for struct, pat in (("_l1a", st.apache), ("_l1p", st.prefixed), ("_l2a", st.apache), ("_l2p", st.prefixed),
                        ("_lf", st.foreign)):
        got = _captured(struct, pat, column)
        if got is not None:
            parts.append(got)
    return _coalesce(parts)


def _apache_fast(lf: pl.LazyFrame) -> pl.LazyFrame:
    """`lf` + the Apache layout of `_first` without its whole regex: `_fast` (matched) and the layout fields.

    LAYOUT_APACHE is ``^HEAD(?:IDENT)?(?P<body>.*)TAIL$``. HEAD (``[ts] LEVEL ``) has exactly one way to match from
    the start (ts ends at the first ``]``, the level is the whole run of capitals before a space); TAIL
    (`` (logger)`` at the end, the logger without parentheses) has exactly one way to match at the end (its ``(``
    is the last one). The whole regex matches iff both do without overlapping (the body may be empty), and then the
    text between them is the optional ident followed by the body: IDENT anchored at the start of that text, taken
    when it fits, exactly as the regex prefers it. Lengths are in characters (polars' slices count characters).
    Each step is its own projection: an expression used twice is computed once."""
    first = pl.col("_first")
    head = pl.when(first.str.starts_with("[")).then(first).str.extract_groups(_fast_rx("head"))
    lf = lf.with_columns(head.alias("_h")).with_columns(
        pl.col("_h").struct.field("ts__a").alias("_ts"), pl.col("_h").struct.field("level__a").alias("_level"),
    ).with_columns(pl.when(pl.col("_ts").is_not_null()).then(first).str.extract(_fast_rx("tail"), 1).alias("_lg"))
    total = first.str.len_chars()
    head_len = pl.col("_ts").str.len_chars() + pl.col("_level").str.len_chars() + 4  # "[" ts "] " level " "
    tail_len = pl.col("_lg").str.len_chars() + 3  # " (" logger ")"
    ok = pl.col("_lg").is_not_null() & (head_len + tail_len <= total)
    lf = lf.with_columns(ok.fill_null(False).alias("_fast")).with_columns(
        pl.when(pl.col("_fast")).then(first.str.slice(head_len, total - head_len - tail_len)).alias("_mid"),
    ).with_columns(pl.col("_mid").str.extract(_fast_rx("ident"), 1).alias("_id_text"))
    ident = pl.col("_id_text")
    body = pl.when(ident.is_not_null()).then(pl.col("_mid").str.slice(ident.str.len_chars() + 3)) \
        .otherwise(pl.col("_mid"))
    return lf.with_columns(
        _nonempty(pl.col("_lg")).alias("_logger"),
        pl.lit(None, pl.String).alias("_thread"),
        _nonempty(ident).alias("_ident"),
        _nonempty(body).alias("_body"),
    ).drop("_h", "_lg", "_mid", "_id_text")


@cache
def _fast_rx(part: str) -> str:
    if part == "head":
        return to_rust("^" + P.APACHE_HEAD, anchor_end=False)
    if part == "tail":
        return to_rust(P.APACHE_TAIL.replace("?P<logger__a>", ""))
    return to_rust("^" + P.APACHE_IDENT.replace("?P<ident__a>", ""), anchor_end=False)



def _declared_layouts(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The layout fields by the declared regexes (the records the fast path did not match)."""
    st = _stages()
    line = pl.col("line").fill_null("")
    lf = lf.with_columns(*_layout_step(pl.col("_first"), "_l1"))
    # a hard-wrapped line: matched again with its line breaks removed
    wrapped = pl.col("_has_nl") & ~_layout_ok("_l1")
    joined = line.str.replace_all("\n", "", literal=True).str.replace_all("\r", "", literal=True)
    lf = lf.with_columns(wrapped.alias("_wrapped")).with_columns(
        *_layout_step(pl.when(pl.col("_wrapped")).then(joined), "_l2"))
    declared_ok = _layout_ok("_l1") | _layout_ok("_l2")
    # a Kafka line behind a foreign logger's prefix
    search = pl.when(~declared_ok).then(pl.when(pl.col("_wrapped")).then(joined).otherwise(pl.col("_first")))
    lf = lf.with_columns(search.str.extract_groups(st.foreign.rust).alias("_lf"))
    layout_ok = declared_ok | pl.col("_lf").struct.field(_OK).is_not_null()
    return lf.with_columns(
        layout_ok.alias("_layout_ok"),
        *[_layout_field(c).alias(f"_{c}") for c in P.LAYOUT_FIELDS],
    ).drop("_l1a", "_l1p", "_l2a", "_l2p", "_lf")


def _layouts(df: pl.DataFrame) -> pl.DataFrame:
    """Bronze rows + `_i` (input order), `_first`, `_tail`, `_has_nl` and the layout columns."""
    line = pl.col("line").fill_null("")
    split = line.str.splitn("\n", 2)
    lf = df.lazy().with_row_index("_i").with_columns(
        line.str.contains("\n", literal=True).alias("_has_nl"),
        split.struct.field("field_0").str.strip_suffix("\r").alias("_first"),
        pl.when(line.str.contains("\n", literal=True)).then(pl.lit("\n") + split.struct.field("field_1"))
        .otherwise(pl.lit("")).alias("_tail"),
    )
    framed = _apache_fast(lf).collect()
    fast = framed.filter(pl.col("_fast")).drop("_fast").with_columns(pl.lit(True).alias("_layout_ok"),
                                                                      pl.lit(False).alias("_wrapped"))
    rest = framed.filter(~pl.col("_fast")).drop("_fast", *[f"_{c}" for c in P.LAYOUT_FIELDS])
    if rest.height == 0:
        return fast
    declared = _declared_layouts(rest.lazy()).collect()
    return pl.concat([fast, declared.select(fast.columns)])


def parse_logs(df: pl.DataFrame, cluster_tz: str = "UTC") -> pl.DataFrame:
    """Bronze rows (RAW_LOGS columns) -> the same rows plus `_route`, `_reason`, `_target`, `ts`, `level`,
    `logger`, `message`, the state-change columns (`sc_<name>`) and the request columns (`rq_<name>`)."""
    st = _stages()
    body = pl.col("_body")
    is_req = pl.col("_layout_ok") & body.str.starts_with(REQUEST_PREFIX).fill_null(False)
    framed = _layouts(df).lazy().with_columns(
        ts_expr(pl.col("_ts"), cluster_tz).alias("ts"),
        is_req.alias("_is_req"),
        pl.when(pl.col("_layout_ok") & ~is_req).then(_classify(body)).alias("_msg"),
        pl.when(pl.col("_ident").is_not_null()).then(pl.col("_ident")).str.extract_groups(st.ident.rust)
        .alias("_id"),
    ).with_columns(
        pl.when(pl.col("_is_req")).then(pl.lit(_REQUESTS, pl.Int32)).otherwise(pl.col("_msg")).alias("_group"),
    ).collect()
    parts = []
    for (group,), rows in framed.partition_by("_group", as_dict=True, include_key=False).items():
        present = [] if group is None or group == _REQUESTS else [int(group)]
        lf = rows.lazy()
        if present:
            lf = lf.with_columns(body.str.extract_groups(st.messages[present[0]].rust).alias(f"_m{present[0]}"))
        finished = _finish(lf, present, group == _REQUESTS)
        parts.append(finished.select(pl.col("^[^_].*$"), "_i", "_route", "_reason", "_target").collect())
    # input order: the layouts (fast and declared) and the message groups were parsed apart
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed")
    return out.sort("_i").drop("_i")


# `_group` of the request-log entries (the message groups are the patterns' indexes, >= 0).
_REQUESTS = -1


def _classify(body: pl.Expr) -> pl.Expr:
    """The index of the first message whose literal prefix (and contained literal) the body has; null if none."""
    out: Any = None
    for i, m in enumerate(P.MESSAGES):
        conds = []
        if m.prefix:
            conds.append(body.str.starts_with(m.prefix))
        if m.contains:
            conds.append(body.str.contains(m.contains, literal=True))
        cond = conds[0] if len(conds) == 1 else conds[0] & conds[1]
        out = pl.when(cond).then(pl.lit(i, pl.Int32)) if out is None else out.when(cond).then(pl.lit(i, pl.Int32))
    result: pl.Expr = out.otherwise(pl.lit(None, pl.Int32))
    return result


def _request_columns(body: pl.Expr) -> list[pl.Expr]:
    """The request-log entry of a `Completed request:` body: the text form's captures, or the JSON object."""
    st = _stages()
    rest = body.str.slice(len(REQUEST_PREFIX)).str.strip_chars_start(" ")
    is_json = pl.col("_is_req") & rest.str.starts_with("{")
    json_text = pl.when(is_json).then(rest)
    out = [
        is_json.alias("_rq_is_json"),
        json_text.str.json_path_match("$").str.starts_with("{").alias("_rq_obj"),
        pl.when(pl.col("_is_req") & ~is_json).then(body).str.extract_groups(st.request_text.rust).alias("_rt"),
    ]
    for name, paths in P.REQUEST_JSON_FIELDS.items():
        parts = [json_text.str.json_path_match("$." + ".".join(p)) for p in paths]
        out.append(_coalesce(parts).alias(f"_rj_{name}"))
    return out


def _request_fields() -> dict[str, pl.Expr]:
    """The request_events columns of request-log rows (their `_rt` struct and `_rj_*` JSON fields computed)."""
    st = _stages()
    rt_ok = pl.col("_rt").struct.field(_OK).is_not_null()
    rq: dict[str, pl.Expr] = {}
    for name in P.REQUEST_TEXT_FIELDS:
        txt = pl.when(rt_ok).then(_captured("_rt", st.request_text, name))
        js = pl.col(f"_rj_{name}") if name in P.REQUEST_JSON_FIELDS else None
        rq[name] = typed(pl.coalesce(txt, js) if js is not None else txt, _RQ_TYPES.get(name, "string"))
    rq["api_name"] = api_name_expr(rq.pop("api"))
    rq["api_key"] = pl.coalesce(typed(pl.col("_rj_api_key"), "int"),
                                rq["api_name"].replace_strict(API_ID, default=None, return_dtype=pl.Int32))
    rq["log_format"] = pl.when(pl.col("_rq_is_json") & pl.col("_rq_obj").fill_null(False)).then(pl.lit("json")) \
        .otherwise(pl.lit("text"))
    return rq


def _no_request_fields() -> dict[str, pl.Expr]:
    """The request columns of rows that are no request-log entry: what :func:`_request_fields` gives them."""
    dtypes = {"int": pl.Int32, "long": pl.Int64, "double": pl.Float64}
    rq: dict[str, pl.Expr] = {name: pl.lit(None, dtypes.get(_RQ_TYPES.get(name, "string"), pl.String))
                              for name in P.REQUEST_TEXT_FIELDS if name != "api"}
    rq["api_name"] = pl.lit(None, pl.String)
    rq["api_key"] = pl.lit(None, pl.Int32)
    rq["log_format"] = pl.lit("text")
    return rq


def _finish(lf: pl.LazyFrame, present: list[int], requests: bool) -> pl.LazyFrame:
    """The typed columns, route and reason of one group of rows: rows of the message patterns `present` (their
    structs `_m<i>` computed), or request-log entries (`requests`), or rows of neither (both empty)."""
    st = _stages()
    msg_ok = pl.any_horizontal([pl.col(f"_m{i}").struct.field(_OK).is_not_null() for i in present]) \
        if present else pl.lit(False)
    mtext: dict[str, pl.Expr] = {}
    for c in P.BODY_FIELDS:
        parts = [got for i in present if (got := _captured(f"_m{i}", st.messages[i], c)) is not None]
        mtext[c] = _coalesce(parts)
    mv = {c: typed(mtext[c], _SC_TYPES.get(c, "string")) for c in P.BODY_FIELDS}
    it = {c: typed(_coalesce([e for e in [_captured("_id", st.ident, c)] if e is not None]),
                   _SC_TYPES.get(c, "string")) for c in P.IDENT_FIELDS}

    def count(text: pl.Expr, token: str, plus: int) -> pl.Expr:
        return (text.str.count_matches(token, literal=True) + plus).cast(pl.Int32)

    both = mv["become_leader"].cast(pl.Int64) + mv["become_follower"].cast(pl.Int64)
    partitions = pl.coalesce(
        mv["partitions"], count(mtext["count_arrows"], "->", 0), count(mtext["count_csv"], ",", 1),
        pl.when(both.is_between(-(2**31), 2**31 - 1)).then(both).cast(pl.Int32),
    )
    sc: dict[str, pl.Expr] = {
        "broker_id": pl.coalesce(it["broker_id"], it["controller_id"], pl.col("broker_id")),
        "request": api_name_expr(mtext["request"]),
        "controller_id": pl.coalesce(mv["controller_id"], it["controller_id"]),
        "controller_epoch": pl.coalesce(mv["controller_epoch"], it["controller_epoch"]),
        "target_brokers": mtext["target_brokers"].str.replace_all(" ", "", literal=True),
        "partitions": partitions,
        "topic": pl.coalesce(mv["topic"], it["topic"]),
        "partition": pl.coalesce(mv["partition"], it["partition"]),
        "leader": pl.coalesce(mv["leader"], it["leader"]),
    }
    for name in ("role", "event", "correlation_id", "target_broker_id", "elapsed_ms", "leader_epoch",
                 "become_leader", "become_follower", "broker_epoch", "current_broker_epoch", "lock_wait_ms",
                 "offset", "kafka_format"):
        sc[name] = mv[name]
    # request log
    if requests:
        lf = lf.with_columns(*_request_columns(pl.col("_body")))
        rq = _request_fields()
    else:
        rq = _no_request_fields()
    req_valid = rq["api_name"].is_not_null() & rq["correlation_id"].is_not_null()
    ok = pl.col("_layout_ok")
    ts_ok = pl.col("ts").is_not_null()
    gc = pl.col("log_kind") == LogKind.GC.value
    # a record its source could not open (a shipper's envelope, jobs.sources.envelopes): its first line says why
    src = pl.col("log_kind") == SOURCE_ERROR_FORMAT
    cont = ~ok & pl.col("line").str.contains(CONTINUATION).fill_null(False)
    route = (
        pl.when(src).then(pl.lit("rejected"))
        .when(gc | cont).then(pl.lit("unused"))
        .when(~ok | ~ts_ok).then(pl.lit("rejected"))
        .when(pl.col("_is_req") & req_valid).then(pl.lit("request"))
        .when(pl.col("_is_req")).then(pl.lit("rejected"))
        .when(msg_ok).then(pl.lit("state_change"))
        .otherwise(pl.lit("unused"))
    )
    reason = (
        pl.when(src).then(pl.col("line").str.split("\n").list.first())
        .when(gc).then(pl.lit(GC_LOG_UNUSED))
        .when(cont).then(pl.lit(CONTINUATION_UNUSED))
        .when(~ok).then(pl.lit("no recognisable log4j layout"))
        .when(~ts_ok).then(pl.lit("unparseable timestamp: ") + pl.col("_ts"))
        .when(pl.col("_is_req") & req_valid).then(pl.lit(None, pl.String))
        .when(pl.col("_is_req")).then(pl.lit("malformed request-log entry"))
        .when(msg_ok).then(pl.lit(None, pl.String))
        .when(pl.col("_msg").is_not_null()).then(pl.lit("message text not recognised"))
        .otherwise(pl.lit("no planewatch event for this message"))
    )
    target = pl.when(pl.col("_is_req") | (pl.col("log_kind") == "request")).then(pl.lit("request_events")) \
        .otherwise(pl.lit("state_change_events"))
    message = pl.col("_body") + pl.when(pl.col("_wrapped")).then(pl.lit("")).otherwise(pl.col("_tail"))
    return lf.with_columns(
        route.alias("_route"),
        reason.alias("_reason"),
        target.alias("_target"),
        pl.col("_level").alias("level"),
        pl.col("_logger").alias("logger"),
        message.alias("message"),
        *[v.alias(f"sc_{k}") for k, v in sc.items()],
        *[v.alias(f"rq_{k}") for k, v in rq.items()],
    )
