"""Quality suites: the hard row rules (polars, inside the engine) quarantine the right rows; GE validates a sample."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from pipelines.quality import load_suite, split_valid_arrow
from pipelines.quality.gx import validate_sample
from pipelines.quality.rules import QualityError, parse_suite
from schemas.tables import METRIC_SAMPLES

T0 = dt.datetime(2021, 3, 2, 8, 0, tzinfo=dt.UTC)


def _sample(signal: str | None, value: float | None, broker: int = 1, ts: dt.datetime | None = T0,
            attribute: str = "Value") -> tuple:
    return ("c", broker, ts, signal, None, attribute, None, None, None, {}, value, "raw", "prometheus", "f", 0, T0, 0,
            T0.date())  # fmt: skip


def test_hard_rules_split_rows_with_the_failed_expectation() -> None:
    rows = [
        _sample("RequestQueueSize", 3.0),
        _sample("RequestQueueSize", -1.0),  # a queue size is never negative
        _sample("NetworkProcessorAvgIdlePercent", 0.7),  # 0..1 convention
        _sample("NetworkProcessorAvgIdlePercent", 85.0),  # 0..100 convention
        _sample("NetworkProcessorAvgIdlePercent", 140.0),
        _sample("NetworkProcessorAvgIdlePercent", float("nan")),
        _sample("AcceptorBlockedPercent", 1.8e9, attribute="Count"),  # a meter's Count: cumulative ns, no range
        _sample(None, 1.0),
        _sample("BytesInPerSec", -5.0),  # not a queue size or a percent: no range rule
        _sample("RequestQueueSize", 1.0, broker=-3),
    ]
    schema = METRIC_SAMPLES.to_arrow()
    tbl = pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)
    good, bad = split_valid_arrow(tbl, load_suite("metric_samples"))
    assert sorted(good.column("value").to_pylist()) == [-5.0, 0.7, 3.0, 85.0, 1.8e9]
    reasons = set(bad.column("_dq_reason").to_pylist())
    assert "expect_column_values_to_not_be_null(signal)" in reasons
    assert "expect_column_values_to_be_between(value, min_value=0) when signal LIKE '%QueueSize'" in reasons
    assert any(r.startswith("expect_column_values_to_be_between(value, min_value=0, max_value=100)") for r in reasons)
    assert any(r.startswith("expect_column_values_to_be_between(broker_id") for r in reasons)
    assert bad.num_rows == 5


def test_great_expectations_sample_results() -> None:
    import pandas as pd

    pdf = pd.DataFrame(
        {"cluster": ["c", "c", "c"], "signal": ["RequestQueueSize", "RequestQueueSize", "X"],
         "value": [1.0, -2.0, 3.0], "ts": [T0] * 3, "broker_id": [1, 2, 3], "metric_format": ["json"] * 3}
    )  # fmt: skip
    rows = validate_sample(pdf, load_suite("metric_samples"), "metric_samples", 4)
    by_name = {r["expectation"]: r for r in rows}
    queue = by_name["expect_column_values_to_be_between(value, min_value=0) when signal LIKE '%QueueSize'"]
    assert (queue["success"], queue["unexpected_count"]) == (False, 1)
    assert by_name["expect_column_values_to_not_be_null(signal)"]["success"]
    assert all(r["batch_id"] == 4 and r["table_name"] == "metric_samples" for r in rows)


def test_a_hard_rule_must_be_a_row_rule() -> None:
    raw = {"expectations": [{"type": "expect_table_row_count_to_be_between", "kwargs": {"column": "x"},
                             "meta": {"hard": True}}]}  # fmt: skip
    with pytest.raises(QualityError, match="cannot be a hard row rule"):
        parse_suite(raw)
