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
QUEUE_RULE = ("expect_column_values_to_be_between(value, min_value=0, max_value=2147483647) "
              "when signal LIKE '%QueueSize'")
FINITE_RULE = ("expect_column_values_to_be_between(value, min_value=-9.223372036854776e+18, "
               "max_value=9.223372036854776e+18)")


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
    assert QUEUE_RULE in reasons
    assert any(r.startswith("expect_column_values_to_be_between(value, min_value=0, max_value=100)") for r in reasons)
    assert any(r.startswith("expect_column_values_to_be_between(broker_id") for r in reasons)
    assert bad.num_rows == 5


def _split(rows: list[tuple]) -> tuple[pa.Table, pa.Table]:
    schema = METRIC_SAMPLES.to_arrow()
    tbl = pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)
    return split_valid_arrow(tbl, load_suite("metric_samples"))


def test_non_finite_and_impossible_magnitudes_are_rejected_with_the_bound_as_reason() -> None:
    inf = float("inf")
    good, bad = _split([
        _sample("RequestQueueSize", inf),  # the "at least inf of 20 requests"
        _sample("BytesInPerSec", -inf, attribute="OneMinuteRate"),
        _sample("BytesInPerSec", 1e300, attribute="Count"),
        _sample("RequestQueueSize", 1e12),  # a finite queue size no Java collection can have
        _sample("RequestQueueSize", 1e7),  # large, but a queue can be that long
        _sample("AcceptorBlockedPercent", 3.2e16, attribute="Count"),  # a year of blocked nanoseconds: a real Count
        _sample("BytesInPerSec", -1.0),  # no range rule: Kafka gauges may be negative (-1: unknown)
    ])
    assert sorted(good.column("value").to_pylist()) == [-1.0, 1e7, 3.2e16]
    assert list(zip(bad.column("value").to_pylist(), bad.column("_dq_reason").to_pylist(), strict=True)) == [
        (inf, FINITE_RULE), (-inf, FINITE_RULE), (1e300, FINITE_RULE), (1e12, QUEUE_RULE)]


def test_request_times_must_be_finite() -> None:
    from schemas.tables import REQUEST_EVENTS

    schema = REQUEST_EVENTS.to_arrow()
    base = {"cluster": "c", "source": "f", "source_offset": 0, "api_name": "LeaderAndIsr", "api_key": 4, "ts": T0}
    rows = [{**base, "request_queue_time_ms": v} for v in (2.5, float("inf"), 1e20)]
    good, bad = split_valid_arrow(pa.Table.from_pylist(rows, schema), load_suite("request_events"))
    assert good.column("request_queue_time_ms").to_pylist() == [2.5]
    assert set(bad.column("_dq_reason").to_pylist()) == {
        "expect_column_values_to_be_between(request_queue_time_ms, min_value=0, max_value=9.223372036854776e+18)"}


def test_great_expectations_sample_results() -> None:
    import pandas as pd

    pdf = pd.DataFrame(
        {"cluster": ["c", "c", "c"], "signal": ["RequestQueueSize", "RequestQueueSize", "X"],
         "value": [1.0, -2.0, float("inf")], "ts": [T0] * 3, "broker_id": [1, 2, 3], "metric_format": ["json"] * 3}
    )  # fmt: skip
    rows = validate_sample(pdf, load_suite("metric_samples"), "metric_samples", 4)
    by_name = {r.expectation: r for r in rows}
    queue = by_name[QUEUE_RULE]
    assert (queue.success, queue.unexpected_count) == (False, 1)
    assert by_name["expect_column_values_to_not_be_null(signal)"].success
    finite = by_name[FINITE_RULE]  # Great Expectations on the sample judges +Inf as the engine does
    assert (finite.success, finite.unexpected_count) == (False, 1)
    assert all(r.batch_id == 4 and r.table_name == "metric_samples" for r in rows)


def test_a_hard_rule_must_be_a_row_rule() -> None:
    raw = {"expectations": [{"type": "expect_table_row_count_to_be_between", "kwargs": {"column": "x"},
                             "meta": {"hard": True}}]}  # fmt: skip
    with pytest.raises(QualityError, match="cannot be a hard row rule"):
        parse_suite(raw)
