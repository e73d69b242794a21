"""Suites as data: the Great Expectations suites of the silver tables, with their hard row rules marked (pure, no I/O
but loading). The hard rules run in :mod:`pipelines.quality.arrow_rules`, inside the engine."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["REASON", "SUITES_DIR", "Expectation", "QualityError", "Suite", "load_suite", "parse_suite"]

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
