"""Suites as data: the Great Expectations suites of the silver tables, with their hard row rules marked (pure, no I/O
but loading), and those hard rules over an Arrow table (:func:`split_valid_arrow`, polars expressions): the one
engine of these rules, run by :func:`pipelines.parsing.engine.run_engine` on every silver row (driver and executors
alike).

Great Expectations semantics, rule by rule: range, set and regex rules ignore nulls; NaN is never within a range for
the columns that may hold it; a ``when`` scope (SQL) is read by polars' SQL expression parser and a null scope counts
as false; the reason is the first failing expectation in suite order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["REASON", "SUITES_DIR", "Expectation", "QualityError", "Suite", "load_suite", "parse_suite",
           "split_valid_arrow"]

# Name of the column that carries the first failed expectation of a failing row (None on a valid row).
REASON = "_dq_reason"
SUITES_DIR = Path(__file__).resolve().parent / "suites"
# The row rules the engine evaluates on every row (the rest run in GE only, on a sample).
ROW_TYPES = (
    "expect_column_values_to_not_be_null",
    "expect_column_values_to_be_between",
    "expect_column_values_to_be_in_set",
    "expect_column_values_to_match_regex",
)


class QualityError(ValueError):
    """A suite file is invalid (unknown expectation type for a hard rule, missing column kwarg)."""


@dataclass(frozen=True)
class Expectation:
    """One expectation of a suite: GE type and kwargs, `hard` (quarantine failing rows), `when` (SQL scope)."""

    type: str
    kwargs: dict[str, Any]
    hard: bool
    when: str | None = None

    @property
    def column(self) -> str:
        return str(self.kwargs["column"])

    @property
    def name(self) -> str:
        """A short, stable name: the quarantine reason and the dq_results expectation."""
        args = {k: v for k, v in self.kwargs.items() if k not in ("column", "row_condition", "condition_parser")}
        inner = ", ".join(f"{k}={v}" for k, v in args.items())
        scope = f" when {self.when}" if self.when else ""
        return f"{self.type}({self.column}{', ' + inner if inner else ''}){scope}"


@dataclass(frozen=True)
class Suite:
    """A table's suite, as versioned in `suites/<table>.json`."""

    name: str
    expectations: tuple[Expectation, ...]

    @property
    def hard(self) -> tuple[Expectation, ...]:
        return tuple(e for e in self.expectations if e.hard)


def parse_suite(raw: dict[str, Any], where: str = "<suite>") -> Suite:
    """Validate a suite mapping (GE's JSON shape: name, expectations[type, kwargs, meta])."""
    exps = []
    for i, e in enumerate(raw.get("expectations", [])):
        kwargs = dict(e.get("kwargs") or {})
        meta = e.get("meta") or {}
        if "column" not in kwargs:
            raise QualityError(f"{where}: expectations[{i}] has no column")
        hard = bool(meta.get("hard", False))
        if hard and e.get("type") not in ROW_TYPES:
            raise QualityError(f"{where}: expectations[{i}] {e.get('type')} cannot be a hard row rule")
        exps.append(Expectation(str(e["type"]), kwargs, hard, meta.get("when")))
    return Suite(str(raw.get("name", where)), tuple(exps))


@cache
def load_suite(table: str, directory: str | None = None) -> Suite:
    """Load `suites/<table>.json` (or from `directory`)."""
    path = Path(directory) if directory else SUITES_DIR
    f = path / f"{table}.json"
    try:
        return parse_suite(json.loads(f.read_text()), str(f))
    except (OSError, json.JSONDecodeError) as exc:
        raise QualityError(f"cannot load suite {f}: {exc}") from exc


def numeric_nan_possible(e: Expectation) -> bool:
    """Whether the rule's column may hold NaN (a NaN is never within a range)."""
    return e.column in ("value",) or e.column.endswith("_ms")


def _violation(e: Expectation) -> Any:
    """A polars boolean expression, true where the row FAILS `e` (never null)."""
    c = pl.col(e.column)
    k = e.kwargs
    if e.type == "expect_column_values_to_not_be_null":
        bad = c.is_null()
    elif e.type == "expect_column_values_to_be_between":
        ok = pl.lit(True)
        if k.get("min_value") is not None:
            ok = ok & (c > k["min_value"] if k.get("strict_min") else c >= k["min_value"])
        if k.get("max_value") is not None:
            ok = ok & (c < k["max_value"] if k.get("strict_max") else c <= k["max_value"])
        nan = c.is_nan() if numeric_nan_possible(e) else pl.lit(False)
        bad = c.is_not_null() & (~ok | nan)
    elif e.type == "expect_column_values_to_be_in_set":
        bad = c.is_not_null() & ~c.is_in(list(k["value_set"]))
    elif e.type == "expect_column_values_to_match_regex":
        bad = c.is_not_null() & ~c.str.contains(str(k["regex"]))
    else:
        raise QualityError(f"{e.type} is not a row rule")
    if e.when:
        bad = pl.sql_expr(e.when).fill_null(False) & bad
    return bad.fill_null(False)


def split_valid_arrow(tbl: pa.Table, suite: Suite) -> tuple[pa.Table, pa.Table]:
    """(valid rows, failing rows with a `_dq_reason` column) of an Arrow table by the suite's hard expectations."""
    hard = [e for e in suite.hard if e.column in tbl.column_names]
    if not hard or tbl.num_rows == 0:
        return tbl, tbl.slice(0, 0).append_column(REASON, pa.nulls(0, pa.string()))
    # Nested columns (metric labels) are never rule columns; polars need not convert them.
    flat = [f.name for f in tbl.schema if not pa.types.is_nested(f.type)]
    frame = pl.from_arrow(tbl.select(flat))
    assert isinstance(frame, pl.DataFrame)
    reason = pl.coalesce(*[pl.when(_violation(e)).then(pl.lit(e.name)) for e in hard], pl.lit(None, pl.String))
    reasons = frame.select(reason.alias(REASON)).to_series().to_arrow()
    failing = pc.is_valid(reasons)
    good = tbl.filter(pc.invert(failing))
    bad = tbl.filter(failing).append_column(REASON, reasons.filter(failing).cast(pa.string()))
    return good, bad
