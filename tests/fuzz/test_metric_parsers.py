"""Property tests of the metric parser (pipelines.parsing.engine over raw_metrics rows): Prometheus exposition text
and the reference broker's JSON lines, valid and mutated; the engine answers, every record lands exactly once with a
reason where it is not silver, and a valid sample parses to the same row whatever follows it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.budget import examples
from tests.fuzz.engine_helpers import reconciled
from tests.fuzz.lines import arbitrary_text, mutated_line
from tests.pipelines.parsing.parse_helpers import metric_fixture_rows, parse_all, raw_metric
from tests.pipelines.parsing.parse_metric_cases import METRIC_CASES

pytestmark = pytest.mark.fuzz

# Samples of real scrapes (the copied samples and the contract fixture's scrape files) and every naming convention
# and JSON shape of the parser cases.
PROMETHEUS: list[str] = sorted({r["line"] for r in metric_fixture_rows()}
                               | {c.line for c in METRIC_CASES if c.route == "sample" and c.metric_format != "json"
                                  and not c.line.lstrip().startswith("{")})
JSON: list[str] = sorted({c.line for c in METRIC_CASES if c.route == "sample" and c.line.lstrip().startswith("{")})
FORMATS = st.sampled_from([None, "prometheus", "json"])

# What replaces a token of a valid line: values and timestamps no exporter should write, label syntax gone wrong.
_NUMBERS = ["NaN", "+Inf", "-Inf", "inf", "1e400", "-1e400", "1e-400", "-0", "0x1A", "1_000", "", "9" * 400,
            "99999999999999999", "-1", "1.5e12", "253402300800000", "\uff19"]
prometheus_tokens = st.one_of(st.sampled_from(_NUMBERS), arbitrary_text, st.sampled_from(
    ['a="1",a="2"', 'a="\\"', 'a="\u00e9\u202e"', "{", "}", '"', "a=1", "__name__=\"x\""]))
_JSON_VALUES = [None, True, "x", "NaN", "Infinity", {}, [], 1e308, -(2**63), 2**64, "1e400", {"value": 1},
                [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]
json_tokens = st.one_of(st.sampled_from([json.dumps(v) for v in _JSON_VALUES]), st.sampled_from(_NUMBERS),
                        arbitrary_text)


@st.composite
def _json_line(draw: st.DrawFn) -> str:
    """A reference-broker JSON line with a field dropped, renamed, retyped, or a key added."""
    obj: dict[str, Any] = json.loads(draw(st.sampled_from(JSON)))
    key = draw(st.sampled_from([*obj, "ts", "value", "mbean", "tags", "labels", "extra"]))
    action = draw(st.sampled_from(["drop", "set", "nest"]))
    if action == "drop":
        obj.pop(key, None)
    elif action == "set":
        obj[key] = draw(st.sampled_from(_JSON_VALUES))
    else:
        obj = {"wrapped": obj} if key == "extra" else {**obj, key: {"k": obj.get(key)}}
    return json.dumps(obj)


records = st.one_of(
    arbitrary_text,
    st.sampled_from(PROMETHEUS),
    st.sampled_from(JSON),
    mutated_line(PROMETHEUS, prometheus_tokens),
    mutated_line(JSON, json_tokens),
    _json_line(),
)


@settings(max_examples=examples(50), deadline=20000)
@given(data=st.data())
def test_every_metric_record_lands_once_with_a_reason(data: st.DataObject) -> None:
    lines = data.draw(st.lists(records, min_size=1, max_size=15))
    formats = data.draw(st.lists(FORMATS, min_size=len(lines), max_size=len(lines)))
    reconciled([raw_metric(line, i, fmt) for i, (line, fmt) in enumerate(zip(lines, formats, strict=True))],
               "metrics")


@settings(max_examples=examples(30), deadline=20000)
@given(data=st.data(), valid=st.sampled_from(PROMETHEUS + JSON), fmt=FORMATS)
def test_a_valid_sample_parses_the_same_before_mutated_neighbours(data: st.DataObject, valid: str,
                                                                  fmt: str | None) -> None:
    # Neighbours follow the sample: the first sample of a series at a timestamp wins, and a mutated copy of the same
    # line before it may be that first one (engine_metrics' duplicate rule).
    after = data.draw(st.lists(records, min_size=1, max_size=8))
    [alone] = parse_all([raw_metric(valid, 0, fmt)], "metrics")
    rows = [raw_metric(valid, 0, fmt)] + [raw_metric(line, 1 + i, fmt) for i, line in enumerate(after)]
    # the engine's rows come grouped by route, not in input order: find the sample by its offset
    [first] = [(route, row) for route, row in parse_all(rows, "metrics") if row["source_offset"] == 0]
    assert first == alone
