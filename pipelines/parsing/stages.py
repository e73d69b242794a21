"""Small constants, lookups and expressions the log and metric parsers share (API names, record and timestamp
limits, captured text as a column type)."""

from __future__ import annotations

import polars as pl

from pipelines.parsing import patterns as P
from pipelines.parsing.rust_regex import to_rust
from schemas.tables import QUARANTINE_RECORD_CHARS

__all__ = ["API_BY_KEY", "API_ID", "CUT_REASON", "LINE_END_BYTES", "MAX_EPOCH_MS", "QUARANTINE_RECORD_CHARS",
           "REQUEST_PREFIX", "cut_by_reader", "typed"]

REQUEST_PREFIX = "Completed request:"
# Epoch milliseconds accepted as a metric timestamp: years 1970..9999 (the range a Delta timestamp holds).
MAX_EPOCH_MS = 253402300799999
# The quarantine reason of a record its reader cut at its length cap (a file source keeps the first part of a longer
# line; `line_bytes` has the whole record's size): only its start is in `line`, so it is not parsed.
CUT_REASON = "record over the reader's length cap: only its start was read (line_bytes: its size)"
# Bytes of a record's physical line a reader drops and `line_bytes` still counts: its line end (a file's CR before
# the LF it splits on; a Kafka record's trailing CR LF).
LINE_END_BYTES = 2


def cut_by_reader(line: pl.Expr, line_bytes: pl.Expr) -> pl.Expr:
    """True where a record is longer than the `line` its reader kept (cut at the reader's length cap).

    `line_bytes` is the whole record's size in bytes; `line` holds it decoded (UTF-8 with replacement, which never
    takes fewer bytes than it replaces), each physical line's end dropped (LINE_END_BYTES per line). A record with
    more bytes than that accounts for was cut (a cut of the last LINE_END_BYTES or fewer goes unnoticed: a cap cuts
    a record far longer than that)."""
    lines = line.str.count_matches("\n", literal=True) + 1
    return (line_bytes.cast(pl.Int64) > line.str.len_bytes() + LINE_END_BYTES * lines).fill_null(False)


# ApiKeys spellings normalised: key = lower-case without `_`/space (LEADER_AND_ISR, "update metadata", LeaderAndIsr).
API_BY_KEY: dict[str, str] = {name.lower(): name for name in P.API_KEYS.values()}
API_ID: dict[str, int] = {name: k for k, name in P.API_KEYS.items()}


def typed(e: pl.Expr, type_: str) -> pl.Expr:
    """A captured text as the table's type: ints out of range and non-numbers become null."""
    if type_ == "int":
        return e.str.strip_chars().cast(pl.Int32, strict=False)
    if type_ == "long":
        return e.str.strip_chars().cast(pl.Int64, strict=False)
    if type_ == "double":
        return pl.when(e.str.contains(to_rust(P.NUMERIC))).then(e.cast(pl.Float64, strict=False))
    return e
