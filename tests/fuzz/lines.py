"""Hypothesis strategies of the parser fuzz tests: text records, and mutations of valid ones.

Valid records are real ones: the copied Kafka log and scrape samples (tests/pipelines/parsing/fixtures) and the parser
cases (tests/pipelines/parse_cases*.py), the same lines the parser tests pin whole rows for.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

from jobs.sources.file_tail import MAX_LINE_BYTES

__all__ = ["arbitrary_text", "mutated_line"]

# Text with what breaks parsers: NUL and control characters, line breaks (a record may hold continuation lines),
# brackets and quotes of the formats, digits, and any other code point (emoji, combining marks, right-to-left).
_SPECIAL = "\x00\x01\x7f\t\r\n \"'[](){}=,:;.-+#\\/|"
arbitrary_text = st.text(
    alphabet=st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8"), st.sampled_from("0123456789eE")),
    max_size=80,
)

_TS = re.compile(r"\d{4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?")
# Timestamps a log4j line may carry, and ones no real clock gives: impossible dates, a time in a DST gap (Paris,
# 2021-03-28 02:30), leap seconds, the end of the Delta timestamp range, garbage of the right shape.
_TIMESTAMPS = st.one_of(
    st.sampled_from([
        "2021-02-30 08:00:01,010", "2021-13-01 00:00:00,000", "2021-03-28 02:30:00,000", "2016-12-31 23:59:60,000",
        "9999-12-31 23:59:59,999", "0000-01-01 00:00:00,000", "2021/03/02 08:00:01.010", "2021-03-02T08:00:01.010",
        "2021-03-02 08:00:01", "2021-03-02 08:00:01,0101", "\uff11\uff19\uff19\uff19-01-01 00:00:00,000",
    ]),
    st.from_regex(r"\A\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\Z"),
)
# Lengths around the file source's record cap (MAX_LINE_BYTES characters; longer records are cut to it).
_NEAR_CAP = st.sampled_from([MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1])


@st.composite
def _mutation(draw: st.DrawFn, line: str, extra: st.SearchStrategy[str] | None) -> str:
    kinds = ["truncate", "insert", "nul", "newline", "timestamp", "duplicate", "delete", "enormous"]
    if extra is not None:
        kinds.append("replace-token")
    kind = draw(st.sampled_from(kinds))
    at = draw(st.integers(0, len(line)))
    if kind == "truncate":
        return line[:at]
    if kind == "insert":
        return line[:at] + draw(arbitrary_text) + line[at:]
    if kind == "nul":
        return line[:at] + "\x00" + line[at:]
    if kind == "newline":
        return line[:at] + draw(st.sampled_from(["\n", "\r\n", "\n\tat x.Y(Z:1)", "\r"])) + line[at:]
    if kind == "timestamp":
        found = _TS.search(line)
        return line[:found.start()] + draw(_TIMESTAMPS) + line[found.end():] if found else line
    if kind == "duplicate":
        end = draw(st.integers(at, len(line)))
        return line[:end] + line[at:end] + line[end:]
    if kind == "delete":
        return line[:at] + line[at + draw(st.integers(1, 10)):]
    if kind == "enormous":
        # padding inside the line up to around the cap, then cut as the file source cuts a record
        pad = max(0, draw(_NEAR_CAP) - len(line))
        return (line[:at] + draw(st.sampled_from(["x", " ", "é", "[", "0"])) * pad + line[at:])[:MAX_LINE_BYTES]
    assert extra is not None
    tokens = [m.span() for m in re.finditer(r"[^\s{}(),=\"\[\]:]+", line)]
    if not tokens:
        return line
    start, end = draw(st.sampled_from(tokens))
    return line[:start] + draw(extra) + line[end:]


@st.composite
def mutated_line(draw: st.DrawFn, lines: list[str], tokens: st.SearchStrategy[str] | None = None) -> str:
    """One of ``lines`` after one to three mutations (truncation, junk, NUL, line breaks, another timestamp,
    repeats, deletions, padding to the record cap, and a token replaced by one of ``tokens``)."""
    line = draw(st.sampled_from(lines))
    for _ in range(draw(st.integers(1, 3))):
        line = draw(_mutation(line, tokens))
    return line
