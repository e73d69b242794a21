"""A dq_results row as a value (schemas.dq.DqResult) is the table's row: same columns, same order, Arrow-typed."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pyarrow as pa
import pytest

from schemas.dq import DqResult
from schemas.tables import DQ_RESULTS

TS = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_a_result_is_a_row_of_the_table() -> None:
    result = DqResult("raw_logs", 3, "reconciliation", "raw == silver + quarantine + unused", True, 0, 10, TS)
    assert list(result.to_row()) == DQ_RESULTS.names
    [row] = pa.Table.from_pylist([result.to_row()], DQ_RESULTS.to_arrow()).to_pylist()
    assert row == {"table_name": "raw_logs", "batch_id": 3, "suite": "reconciliation",
                   "expectation": "raw == silver + quarantine + unused", "success": True, "unexpected_count": 0,
                   "element_count": 10, "run_ts": TS, "duration_ms": None}
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.success = False  # type: ignore[misc]
