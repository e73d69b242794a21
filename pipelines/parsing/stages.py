"""The compiled stages both engines run (built once from :mod:`pipelines.parsing.patterns`), and the small pure helpers
whose Spark and Python forms must agree (timestamps, number casts, API names)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from pipelines.parsing import patterns as P
from pipelines.parsing.compiler import Compiled, SlotLayout, compile_regex, layout_for, python_regex
from schemas.tables import QUARANTINE_RECORD_CHARS

__all__ = [
    "API_BY_KEY",
    "LOG_STAGES",
    "QUARANTINE_RECORD_CHARS",
    "REQUEST_PREFIX",
    "LogStages",
    "api_key_of",
    "api_name",
    "py_double",
    "py_int",
    "py_ts",
    "py_ts_from_ms",
]

REQUEST_PREFIX = "Completed request:"
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# ApiKeys spellings normalised: key = lower-case without `_`/space (LEADER_AND_ISR, "update metadata", LeaderAndIsr).
API_BY_KEY: dict[str, str] = {name.lower(): name for name in P.API_KEYS.values()}
API_ID: dict[str, int] = {name: k for k, name in P.API_KEYS.items()}


def api_key_of(text: str) -> str:
    """The lookup key of an API spelling (Spark: lower(translate(x, '_ ', '')))."""
    return text.lower().replace("_", "").replace(" ", "")


def api_name(text: str | None) -> str | None:
    """LEADER_AND_ISR / "update metadata" / LeaderAndIsr -> LeaderAndIsr; unknown spellings are kept as they are."""
    if text is None:
        return None
    return API_BY_KEY.get(api_key_of(text), text)


@dataclass(frozen=True)
class LogStages:
    """Compiled regexes of the log parser."""

    prefix_java: str
    prefix_python: re.Pattern[str]
    layout: Compiled
    layout_slots: SlotLayout
    # LAYOUT's Apache alternative alone, same slots: what `layout` gives on a line starting with `[` (Spark engine)
    layout_apache: Compiled
    ident: Compiled
    ident_slots: SlotLayout
    messages: tuple[Compiled, ...]
    message_slots: SlotLayout
    request_text: Compiled
    request_slots: SlotLayout


@cache
def _build() -> LogStages:
    layout_slots = layout_for([P.LAYOUT], P.LAYOUT_FIELDS, concat=True)
    ident_slots = layout_for([P.IDENT], P.IDENT_FIELDS, concat=True)
    message_slots = layout_for([m.regex for m in P.MESSAGES], P.BODY_FIELDS, concat=False)
    messages = tuple(
        compile_regex(
            m.regex,
            message_slots,
            {"event": m.event, "role": m.role, "kafka_format": m.kafka_format, "request": m.request or "", **m.consts},
        )
        for m in P.MESSAGES
    )
    request_slots = layout_for([P.REQUEST_TEXT], P.REQUEST_TEXT_FIELDS, concat=True)
    return LogStages(
        "(?s)" + P.PREFIX,
        re.compile(P.PREFIX, re.ASCII | re.DOTALL),
        compile_regex(P.LAYOUT, layout_slots, concat=True),
        layout_slots,
        compile_regex(P.LAYOUT_APACHE, layout_slots, concat=True),
        compile_regex(P.IDENT, ident_slots, concat=True),
        ident_slots,
        messages,
        message_slots,
        compile_regex(P.REQUEST_TEXT, request_slots, concat=True),
        request_slots,
    )


LOG_STAGES = _build()

# ------------------------------------------------------------------------------------------ Python forms of casts
_INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)


def py_int(text: str | None, bits: int = 32) -> int | None:
    """Spark's try_cast(text AS INT/BIGINT) for the digit strings the regexes capture."""
    if text is None or not _INT_RE.fullmatch(text.strip()):
        return None
    value = int(text)
    lo, hi = INT32 if bits == 32 else INT64
    return value if lo <= value <= hi else None


def py_double(text: str | None) -> float | None:
    """try_cast(text AS DOUBLE), gated by patterns.NUMERIC in both engines."""
    if text is None or python_regex(P.NUMERIC).match(text) is None:
        return None
    return float(text)


_TS_NORM = str.maketrans("/T,", "- .")


def py_ts(text: str | None, tz: str = "UTC") -> datetime | None:
    """A log4j timestamp text -> aware UTC datetime, as the Spark engine computes it (None when unparseable)."""
    if text is None:
        return None
    norm = text.translate(_TS_NORM)
    if python_regex(P.TS_STRICT).match(norm) is None:
        return None
    try:
        naive = datetime(
            int(norm[0:4]), int(norm[5:7]), int(norm[8:10]), int(norm[11:13]), int(norm[14:16]), int(norm[17:19]),
            int(norm[20:23]) * 1000 if len(norm) > 19 else 0,
        )
    except ValueError:
        return None
    if tz == "UTC":
        return naive.replace(tzinfo=UTC)
    return naive.replace(tzinfo=_zone(tz)).astimezone(UTC)


@cache
def _zone(tz: str) -> ZoneInfo:
    return ZoneInfo(tz)


# Epoch milliseconds accepted as a metric timestamp: years 1970..9999 (Spark's timestamp range check).
MAX_EPOCH_MS = 253402300799999


def py_ts_from_ms(ms: int | None) -> datetime | None:
    """timestamp_millis(ms) for 0 <= ms <= MAX_EPOCH_MS, else None."""
    if ms is None or not 0 <= ms <= MAX_EPOCH_MS:
        return None
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
