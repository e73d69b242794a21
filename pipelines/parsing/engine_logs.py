"""The log parser: bronze ``raw_logs`` rows -> one routed row per record, as polars expressions over the whole batch.

Theory of operation (each step one vectorized pass; polars runs the Rust regex crate, see
:mod:`pipelines.parsing.rust_regex`):

1. The record's first line (a record may hold continuation lines: a stack trace) is matched against the layouts of
   :mod:`pipelines.parsing.patterns`: the Apache layout alone on lines starting with ``[`` (no other layout can match
   them), else every layout behind zero or more shipper prefixes. A record whose first line matches nothing but that
   has continuation lines is a hard-wrapped line: it is matched again with its line breaks removed. A record still
   without a layout is searched for an Apache line anywhere in it (a foreign logger's prefix, FOREIGN_APACHE).
2. The timestamp text becomes a UTC instant (read in the cluster's zone); an impossible date rejects the record.
3. ``Completed request:`` bodies are request-log entries (text or KIP-673 JSON); every other body goes through the
   message classifier: literal prefix/contains tests pick ONE message pattern per row, and only that pattern's
   regex runs on that row (a pattern's regex runs only on the rows it was picked for).
4. The captured texts become typed columns (``""`` counts as not captured), and each row gets its route
   (:data:`ROUTES`) and reason.

The result is one wide frame; :mod:`pipelines.parsing.engine` selects each table's columns from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from pipelines.parsing import patterns as P
from pipelines.parsing.rust_regex import to_rust
from pipelines.parsing.stages import API_BY_KEY, API_ID, REQUEST_PREFIX
from schemas.tables import REQUEST_EVENTS, STATE_CHANGE_EVENTS

if TYPE_CHECKING:
    import polars as pl

__all__ = ["ROUTES", "parse_logs", "ts_expr"]

ROUTES = ("state_change", "request", "rejected", "unused")
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
    import polars as pl

    return pl.when(e != "").then(e)


def _captured(struct: str, pat: _Pattern, column: str) -> pl.Expr | None:
    """The first non-empty capture feeding `column` (then the pattern's constant for it), or None if neither."""
    import polars as pl

    parts = [_nonempty(pl.col(struct).struct.field(g)) for g in pat.columns.get(column, ())]
    if column in pat.consts:
        parts.append(pl.when(pl.col(struct).struct.field(_OK).is_not_null()).then(pl.lit(pat.consts[column])))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pl.coalesce(parts)


def _coalesce(parts: list[pl.Expr]) -> pl.Expr:
    import polars as pl

    if not parts:
        return pl.lit(None, pl.String)
    return parts[0] if len(parts) == 1 else pl.coalesce(parts)


def typed(e: pl.Expr, type_: str) -> pl.Expr:
    """A captured text as the table's type: ints out of range and non-numbers become null."""
    import polars as pl

    if type_ == "int":
        return e.str.strip_chars().cast(pl.Int32, strict=False)
    if type_ == "long":
        return e.str.strip_chars().cast(pl.Int64, strict=False)
    if type_ == "double":
        return pl.when(e.str.contains(to_rust(P.NUMERIC))).then(e.cast(pl.Float64, strict=False))
    return e


def ts_expr(text: pl.Expr, tz: str) -> pl.Expr:
    """log4j timestamp text -> UTC instant (microseconds), read in zone `tz`; null when not a real time.

    `/`, `T` and `,` are normalised to `-`, ` ` and `.`; the text must then be ``yyyy-MM-dd HH:mm:ss[.SSS]``."""
    import polars as pl

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
    import polars as pl

    key = text.str.to_lowercase().str.replace_all("_", "", literal=True).str.replace_all(" ", "", literal=True)
    return pl.coalesce(key.replace_strict(API_BY_KEY, default=None, return_dtype=pl.String), text)


def _layout_step(text: pl.Expr, prefix: str) -> list[pl.Expr]:
    """The layout structs of `text`: Apache alone on `[` lines, the prefixed layouts on the others."""
    import polars as pl

    st = _stages()
    bracket = text.str.starts_with("[")
    return [
        pl.when(bracket).then(text).str.extract_groups(st.apache.rust).alias(f"{prefix}a"),
        pl.when(~bracket).then(text).str.extract_groups(st.prefixed.rust).alias(f"{prefix}p"),
    ]


def _layout_ok(prefix: str) -> pl.Expr:
    import polars as pl

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


def parse_logs(df: pl.DataFrame, cluster_tz: str = "UTC") -> pl.DataFrame:
    """Bronze rows (RAW_LOGS columns) -> the same rows plus `_route`, `_reason`, `_target`, `ts`, `level`,
    `logger`, `message`, the state-change columns (`sc_<name>`) and the request columns (`rq_<name>`)."""
    import polars as pl

    st = _stages()
    line = pl.col("line").fill_null("")
    lf = df.lazy().with_columns(
        line.str.contains("\n", literal=True).alias("_has_nl"),
        line.str.splitn("\n", 2).alias("_split"),
    ).with_columns(
        pl.col("_split").struct.field("field_0").str.strip_suffix("\r").alias("_first"),
        pl.when(pl.col("_has_nl")).then(pl.lit("\n") + pl.col("_split").struct.field("field_1"))
        .otherwise(pl.lit("")).alias("_tail"),
    ).with_columns(*_layout_step(pl.col("_first"), "_l1"))
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
    lf = lf.with_columns(
        layout_ok.alias("_layout_ok"),
        *[_layout_field(c).alias(f"_{c}") for c in P.LAYOUT_FIELDS],
    ).drop("_split", "_l1a", "_l1p", "_l2a", "_l2p", "_lf")
    body = pl.col("_body")
    is_req = pl.col("_layout_ok") & body.str.starts_with(REQUEST_PREFIX).fill_null(False)
    lf = lf.with_columns(
        ts_expr(pl.col("_ts"), cluster_tz).alias("ts"),
        is_req.alias("_is_req"),
        _classify(body).alias("_msg"),
        pl.when(pl.col("_ident").is_not_null()).then(pl.col("_ident")).str.extract_groups(st.ident.rust)
        .alias("_id"),
    )
    lf = lf.with_columns(pl.when(pl.col("_layout_ok") & ~pl.col("_is_req")).then(pl.col("_msg")).alias("_msg"))
    present = sorted(x for x in lf.select(pl.col("_msg").unique()).collect()["_msg"].to_list() if x is not None)
    lf = lf.with_columns(
        *[pl.when(pl.col("_msg") == i).then(body).str.extract_groups(st.messages[i].rust).alias(f"_m{i}")
          for i in present],
        *_request_columns(body),
    )
    return _finish(lf, present).collect()


def _classify(body: pl.Expr) -> pl.Expr:
    """The index of the first message whose literal prefix (and contained literal) the body has; null if none."""
    import polars as pl

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
    import polars as pl

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


def _finish(lf: pl.LazyFrame, present: list[int]) -> pl.LazyFrame:
    import polars as pl

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
    req_valid = rq["api_name"].is_not_null() & rq["correlation_id"].is_not_null()
    ok = pl.col("_layout_ok")
    ts_ok = pl.col("ts").is_not_null()
    route = (
        pl.when(~ok | ~ts_ok).then(pl.lit("rejected"))
        .when(pl.col("_is_req") & req_valid).then(pl.lit("request"))
        .when(pl.col("_is_req")).then(pl.lit("rejected"))
        .when(msg_ok).then(pl.lit("state_change"))
        .otherwise(pl.lit("unused"))
    )
    reason = (
        pl.when(~ok).then(pl.lit("no recognisable log4j layout"))
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
