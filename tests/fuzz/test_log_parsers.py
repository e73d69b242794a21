"""Property tests of the log parser (pipelines.parsing.engine over raw_logs rows): whatever the records, the engine
answers, every record lands exactly once with a reason where it is not silver, and a valid line parses to the same
row whatever its neighbours are."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.budget import examples
from tests.fuzz.engine_helpers import reconciled
from tests.fuzz.lines import arbitrary_text, mutated_line
from tests.pipelines.parsing.parse_cases import ALL_LOG_CASES
from tests.pipelines.parsing.parse_helpers import log_fixture_rows, parse_all, raw_log

pytestmark = pytest.mark.fuzz

# Real Kafka log4j records (the copied samples) and every layout and message the parser cases cover.
VALID: list[str] = sorted({r["line"] for r in log_fixture_rows()}
                          | {c.line for c in ALL_LOG_CASES if c.route in ("state_change", "request")})
KINDS = st.sampled_from(["state-change", "request", "server", "controller", "unknown"])
ZONES = st.sampled_from(["UTC", "Europe/Paris", "America/New_York"])
records = st.one_of(arbitrary_text, mutated_line(VALID), st.sampled_from(VALID))


def _rows(lines: list[str], kinds: list[str]) -> list[dict[str, Any]]:
    return [raw_log(line, i, kind) for i, (line, kind) in enumerate(zip(lines, kinds, strict=True))]


@settings(max_examples=examples(40), deadline=20000)
@given(data=st.data(), zone=ZONES)
def test_every_log_record_lands_once_with_a_reason(data: st.DataObject, zone: str) -> None:
    lines = data.draw(st.lists(records, min_size=1, max_size=12))
    kinds = data.draw(st.lists(KINDS, min_size=len(lines), max_size=len(lines)))
    reconciled(_rows(lines, kinds), "logs", zone)


@settings(max_examples=examples(30), deadline=20000)
@given(data=st.data(), zone=ZONES, valid=st.sampled_from(VALID), kind=KINDS)
def test_a_valid_log_line_parses_the_same_amid_mutated_neighbours(data: st.DataObject, zone: str, valid: str,
                                                                   kind: str) -> None:
    before = data.draw(st.lists(st.one_of(arbitrary_text, mutated_line(VALID)), max_size=4))
    after = data.draw(st.lists(st.one_of(arbitrary_text, mutated_line(VALID)), max_size=4))
    alone = parse_all([raw_log(valid, 1000, kind)], "logs", zone)[0]
    rows = [raw_log(line, i, kind) for i, line in enumerate(before)] + [raw_log(valid, 1000, kind)] + [
        raw_log(line, 2000 + i, kind) for i, line in enumerate(after)]
    # the engine's rows come grouped by route, not in input order: find the line by its offset
    [amid] = [(route, row) for route, row in parse_all(rows, "logs", zone) if row["source_offset"] == 1000]
    assert amid == alone

