"""Suites as data, and their hard row-level expectations as Spark Column expressions (pure, no I/O but loading)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["REASON", "SUITES_DIR", "Expectation", "QualityError", "Suite", "flag_invalid", "load_suite", "split_valid",
           "violation"]

# Name of the column that carries the first failed expectation of a failing row (None on a valid row).
REASON = "_dq_reason"
SUITES_DIR = Path(__file__).resolve().parent / "suites"
# The row rules Spark can evaluate per row (the rest run in GE only).
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
    """One expectation of a suite: GE type and kwargs, `hard` (quarantine failing rows), `when` (Spark SQL scope)."""

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


def violation(e: Expectation) -> Column:
    """A boolean Column, true where the row FAILS `e` (GE semantics: range/set/regex rules ignore nulls)."""
    from pyspark.sql import functions as F

    c = F.col(e.column)
    k = e.kwargs
    if e.type == "expect_column_values_to_not_be_null":
        bad = c.isNull()
    elif e.type == "expect_column_values_to_be_between":
        conds = []
        if k.get("min_value") is not None:
            conds.append(c > F.lit(k["min_value"]) if k.get("strict_min") else c >= F.lit(k["min_value"]))
        if k.get("max_value") is not None:
            conds.append(c < F.lit(k["max_value"]) if k.get("strict_max") else c <= F.lit(k["max_value"]))
        ok = conds[0] if conds else F.lit(True)
        for cond in conds[1:]:
            ok = ok & cond
        # NaN is not within any range (Spark orders NaN above every number, so test it explicitly).
        nan = F.isnan(c) if _numeric_nan_possible(e) else F.lit(False)
        bad = c.isNotNull() & (~ok | nan)
    elif e.type == "expect_column_values_to_be_in_set":
        bad = c.isNotNull() & ~c.isin(list(k["value_set"]))
    elif e.type == "expect_column_values_to_match_regex":
        bad = c.isNotNull() & ~c.rlike(str(k["regex"]))
    else:
        raise QualityError(f"{e.type} is not a row rule")
    if e.when:
        bad = F.coalesce(F.expr(e.when), F.lit(False)) & bad
    return bad


def _numeric_nan_possible(e: Expectation) -> bool:
    return e.column in ("value",) or e.column.endswith("_ms")


def flag_invalid(df: DataFrame, suite: Suite) -> DataFrame:
    """`df` with a REASON column: the first hard expectation the row fails, in suite order; null on a valid row."""
    from pyspark.sql import functions as F

    hard = [e for e in suite.hard if e.column in df.columns]
    reason = F.coalesce(*[F.when(violation(e), F.lit(e.name)) for e in hard], F.lit(None).cast("string"))
    return df.withColumn(REASON, reason)


def split_valid(df: DataFrame, suite: Suite) -> tuple[DataFrame, DataFrame]:
    """(valid rows, failing rows with a REASON column) by the suite's hard expectations, over every row."""
    from pyspark.sql import functions as F

    flagged = flag_invalid(df, suite)
    good = flagged.where(F.col(REASON).isNull()).drop(REASON)
    bad = flagged.where(F.col(REASON).isNotNull())
    return good, bad
