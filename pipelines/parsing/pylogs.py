"""The log parser in pure Python (``re``), step for step what :mod:`pipelines.parsing.spark_logs` computes.

Used by ``planewatch parse`` (answers in about a second, no JVM) and by the test that holds both engines to identical
rows. Input and output rows are plain dicts with the bronze / silver column names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from pipelines.parsing import patterns as P
from pipelines.parsing.compiler import MARK, SEP, SlotLayout
from pipelines.parsing.stages import (
    API_ID,
    LOG_STAGES,
    REQUEST_PREFIX,
    api_name,
    py_double,
    py_int,
    py_ts,
)
from schemas.tables import QUARANTINE_RECORD_CHARS, RAW_LOGS, REQUEST_EVENTS, STATE_CHANGE_EVENTS

__all__ = ["ROUTES", "parse_line", "parse_lines"]

ROUTES = ("state_change", "request", "rejected", "unused")
Row = dict[str, Any]
_SC_TYPES = {c.name: c.type for c in STATE_CHANGE_EVENTS.columns}
_RQ_TYPES = {c.name: c.type for c in REQUEST_EVENTS.columns}
_PROV = ("source", "source_offset", "ingest_ts", "batch_id")


def _slots(parts: str | None) -> list[str] | None:
    return None if parts is None else parts[1:].split(SEP)


def _matched(parts: str | None, n: int) -> bool:
    return parts is not None and parts.startswith(MARK) and len(parts[1:].split(SEP)) == n


def _field(arr: list[str] | None, layout: SlotLayout, column: str) -> str | None:
    if arr is None:
        return None
    n = len(arr)
    for i in layout.positions.get(column, ()):
        if i < n and arr[i]:
            return arr[i]
    return None


def _typed(text: str | None, type_: str) -> Any:
    if type_ == "int":
        return py_int(text, 32)
    if type_ == "long":
        return py_int(text, 64)
    if type_ == "double":
        return py_double(text)
    return text


def _strip(text: str) -> str:
    return text if text.startswith("[") else LOG_STAGES.prefix_python.sub("", text, count=1)


def _json_leaf(value: Any) -> str | None:
    """What Spark's from_json yields for a STRING field holding this JSON value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _json_path(obj: dict[str, Any] | None, path: tuple[str, ...]) -> str | None:
    cur: Any = obj
    for key in path[:-1]:
        cur = cur.get(key) if isinstance(cur, dict) else None
    return _json_leaf(cur.get(path[-1])) if isinstance(cur, dict) else None


def _count(text: str | None, token: str, plus: int) -> int | None:
    return None if text is None else text.count(token) + plus


def _try_add(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    s = a + b
    return s if -(2**31) <= s <= 2**31 - 1 else None


def parse_line(rec: Mapping[str, Any], cluster_tz: str = "UTC") -> tuple[str, Row]:
    """One RAW_LOGS row -> (route, row of that route's table; unused rows carry `reason`)."""
    st = LOG_STAGES
    line: str = rec.get("line") or ""
    nl = line.find("\n")
    has_nl = nl >= 0
    tail = line[nl:] if has_nl else ""
    first = line[:nl] if has_nl else line
    if first.endswith("\r"):
        first = first[:-1]
    n_layout = len(st.layout_slots.slots)
    lp = st.layout.expand(_strip(first))
    wrapped = has_nl and not _matched(lp, n_layout)
    if wrapped:
        lp = st.layout.expand(_strip(line.replace("\n", "").replace("\r", "")))
    layout_ok = _matched(lp, n_layout)
    la = _slots(lp)
    ts_text = _field(la, st.layout_slots, "ts")
    body = _field(la, st.layout_slots, "body")
    ts = py_ts(ts_text, cluster_tz) if layout_ok else None
    is_req = layout_ok and body is not None and body.startswith(REQUEST_PREFIX)
    if not layout_ok:
        return "rejected", _rejected(rec, "no recognisable log4j layout", is_req)
    if ts is None:
        return "rejected", _rejected(rec, f"unparseable timestamp: {ts_text}", is_req)
    if is_req:
        assert body is not None
        row = _request(rec, body, ts)
        if row is None:
            return "rejected", _rejected(rec, "malformed request-log entry", True)
        return "request", row
    mp = None
    if body is not None:
        for m, comp in zip(P.MESSAGES, st.messages, strict=True):
            if body.startswith(m.prefix) and m.contains in body:
                mp = comp.expand(body)
                break
    if not _matched(mp, len(st.message_slots.slots)):
        reason = "message text not recognised" if mp is not None else "no planewatch event for this message"
        out = {c: rec.get(c) for c in RAW_LOGS.names}
        out["reason"] = reason
        return "unused", out
    ident = _field(la, st.layout_slots, "ident")
    ia = _slots(st.ident.expand(ident)) if ident is not None else None
    it = {c: _typed(_field(ia, st.ident_slots, c), _SC_TYPES.get(c, "string")) for c in P.IDENT_FIELDS}
    ma = _slots(mp)
    mf = {c: _field(ma, st.message_slots, c) for c in P.BODY_FIELDS}
    mv = {c: _typed(mf[c], _SC_TYPES.get(c, "string")) for c in P.BODY_FIELDS}

    def first_of(*values: Any) -> Any:
        return next((v for v in values if v is not None), None)

    partitions = first_of(
        mv["partitions"], _count(mf["count_arrows"], "->", 0), _count(mf["count_csv"], ",", 1),
        _try_add(mv["become_leader"], mv["become_follower"]),
    )
    sc: Row = {
        "cluster": rec.get("cluster"),
        "broker_id": first_of(it["broker_id"], it["controller_id"], rec.get("broker_id")),
        "ts": ts,
        "level": _field(la, st.layout_slots, "level"),
        "logger": _field(la, st.layout_slots, "logger"),
        "request": api_name(mf["request"]),
        "controller_id": first_of(mv["controller_id"], it["controller_id"]),
        "controller_epoch": first_of(mv["controller_epoch"], it["controller_epoch"]),
        "target_brokers": None if mf["target_brokers"] is None else mf["target_brokers"].replace(" ", ""),
        "partitions": partitions,
        "topic": first_of(mv["topic"], it["topic"]),
        "partition": first_of(mv["partition"], it["partition"]),
        "leader": first_of(mv["leader"], it["leader"]),
        "message": None if body is None else body + ("" if wrapped else tail),
        "date": ts.date(),
    }
    out = {}
    for name in STATE_CHANGE_EVENTS.names:
        if name in sc:
            out[name] = sc[name]
        elif name in _PROV:
            out[name] = rec.get(name)
        else:
            out[name] = mv[name]
    return "state_change", out


def _request(rec: Mapping[str, Any], body: str, ts: datetime) -> Row | None:
    st = LOG_STAGES
    rest = body[len(REQUEST_PREFIX):].lstrip(" ")
    values: dict[str, str | None] = {}
    is_json = rest.startswith("{")
    obj: dict[str, Any] | None = None
    if is_json:
        obj = _json_object(rest)
        for name in P.REQUEST_TEXT_FIELDS:
            values[name] = next(
                (v for v in (_json_path(obj, p) for p in P.REQUEST_JSON_FIELDS[name]) if v is not None), None
            )
        json_key = py_int(_json_path(obj, ("requestHeader", "requestApiKey")), 32)
    else:
        rp = st.request_text.expand(body)
        ok = _matched(rp, len(st.request_slots.slots))
        ra = _slots(rp)
        for name in P.REQUEST_TEXT_FIELDS:
            values[name] = _field(ra, st.request_slots, name) if ok else None
        json_key = None
    row: Row = {name: _typed(values[name], _RQ_TYPES.get(name, "string")) for name in P.REQUEST_TEXT_FIELDS}
    row["api_name"] = api_name(row.pop("api"))
    row["api_key"] = json_key if json_key is not None else API_ID.get(row["api_name"] or "")
    row["log_format"] = "json" if is_json and obj is not None else "text"
    if row["api_name"] is None or row["correlation_id"] is None:
        return None
    out: Row = {}
    for name in REQUEST_EVENTS.names:
        if name == "ts":
            out[name] = ts
        elif name == "date":
            out[name] = ts.date()
        elif name in ("cluster", "broker_id", *_PROV):
            out[name] = rec.get(name)
        else:
            out[name] = row[name]
    return out


def _rejected(rec: Mapping[str, Any], reason: str, is_req: bool) -> Row:
    target = "request_events" if is_req or rec.get("log_kind") == "request" else "state_change_events"
    return {
        "cluster": rec.get("cluster"),
        "broker_id": rec.get("broker_id"),
        "target_table": target,
        "stage": "parse",
        "reason": reason,
        "record": (rec.get("line") or "")[:QUARANTINE_RECORD_CHARS] if rec.get("line") is not None else None,
        **{c: rec.get(c) for c in _PROV},
        "date": rec.get("date"),
    }


def parse_lines(recs: Iterable[Mapping[str, Any]], cluster_tz: str = "UTC") -> Iterator[tuple[str, Row]]:
    """parse_line over many rows."""
    for rec in recs:
        yield parse_line(rec, cluster_tz)
