"""The suites' hard row rules over an Arrow table (polars expressions): the one engine of these rules, run by
:func:`pipelines.parsing.engine.run_engine` on every silver row (driver and executors alike).

Great Expectations semantics, rule by rule: range, set and regex rules ignore nulls; NaN is never within a range for
the columns that may hold it; a ``when`` scope (SQL) is read by polars' SQL expression parser and a null scope counts
as false; the reason is the first failing expectation in suite order.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa

from pipelines.quality.rules import REASON, Expectation, QualityError, Suite, numeric_nan_possible

__all__ = ["REASON", "split_valid_arrow"]


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
    failing = pa.compute.is_valid(reasons)
    good = tbl.filter(pa.compute.invert(failing))
    bad = tbl.filter(failing).append_column(REASON, reasons.filter(failing).cast(pa.string()))
    return good, bad
