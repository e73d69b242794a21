"""The log parser's Python engine against whole expected rows (no Spark): every FACTS.md format, layouts, prefixes,
request logs, and bad input."""

from __future__ import annotations

import pytest

from pipelines.parsing import EVENTS
from tests.pipelines.parsing.parse_helpers import (
    expected_row,
    load_module,
    log_fixture_rows,
    parse_all,
    parse_line,
    raw_log,
)

cases = load_module("parse_cases")


@pytest.mark.parametrize("case", cases.ALL_LOG_CASES, ids=lambda c: c.line[:70])
def test_case_whole_row(case) -> None:
    raw = raw_log(case.line, 3, case.log_kind)
    route, row = parse_line(raw)
    assert route == case.route
    assert row == expected_row(case.route, raw, case.expect)


def test_every_event_is_covered_by_a_case() -> None:
    covered = {c.expect.get("event") for c in cases.ALL_LOG_CASES}
    assert set(EVENTS) - covered == {"epoch_cache_truncated", "isr_updated", "leader_and_isr_breakdown",
                                     "leader_epoch_checkpoint_flushed"}  # these four come from the real samples


def test_samples_that_carry_control_plane_information() -> None:
    """The real excerpts (copied with provenance): what each line becomes."""
    rows = [r for r in log_fixture_rows() if r["source"].startswith("samples/")]
    got = [(r["source"][8:10], *p) for r, p in zip(rows, parse_all(rows), strict=True)]
    events = [(src, row.get("event"), row.get("correlation_id"), row.get("reason")) for src, _, row in got]
    # the records are the file source's (jobs.sources.file_tail): a line hard-wrapped by the paste is two records, as
    # the pipeline reads it (the joined form of such a line is a parse case: "a line hard-wrapped by a paste")
    wrapped = ("01", None, None, "no recognisable log4j layout")
    assert events == [
        wrapped, wrapped,  # a LeaderAndIsr Sending line cut at "state.change.l|ogger)"
        wrapped, wrapped,  # the next one, cut the same way
        ("01", "update_metadata_sending", None, None),
        ("01", "leader_and_isr_handling", 4, None),
        wrapped, wrapped,  # a Stopped fetchers line cut before "ansition for 1 partitions"
        ("01", "leader_started", None, None),
        ("01", "update_metadata_sending", None, None),
        ("01", None, None, "no recognisable log4j layout"),  # the excerpt ends mid-line
        ("04", None, None, "no recognisable log4j layout"),  # pre-1.0 text, truncated before its logger
        ("05", None, None, "no planewatch event for this message"),  # Loading log
        ("05", None, None, "no planewatch event for this message"),  # Loaded index file
        ("05", None, None, "no recognisable log4j layout"),  # epoch-cache line truncated in the source
        ("06", None, None, "no recognisable log4j layout"),  # message body only (no layout in the paste)
        ("07", None, None, "no recognisable log4j layout"),  # KIP wiki illustration without layout (text)
        ("07", None, None, "no recognisable log4j layout"),  # the same, JSON
        ("08", "leader_and_isr_breakdown", 1, None),
        ("11", "isr_updated", None, None),
        ("11", None, None, "no recognisable log4j layout"),  # missing "[" in the source
        ("11", None, None, "no planewatch event for this message"),
        ("11", None, None, "no planewatch event for this message"),
        ("11", None, None, "no planewatch event for this message"),
        ("11", None, None, "no planewatch event for this message"),
        ("11", None, None, "no planewatch event for this message"),
    ]
    handling = got[5][2]
    assert (handling["broker_id"], handling["controller_id"], handling["partitions"]) == (0, 0, 1)
    leader = got[8][2]
    assert (leader["topic"], leader["partition"], leader["leader_epoch"], leader["offset"]) == ("test", 1, 1, 0)
    breakdown = got[18][2]
    assert (breakdown["broker_id"], breakdown["controller_id"], breakdown["lock_wait_ms"]) == (0, 0, 0)


def test_samples_wrapped_in_their_documented_layout() -> None:
    """samples/06 and /07 are message bodies; in a real log they carry the layout FACTS.md gives them."""
    shrink = ("[2019-01-18 10:00:00,000] INFO [Partition test-0 broker=0] Shrinking ISR from 1,2,0 to 0. Leader: "
              "(highWatermark: 0, endOffset: 20). Out of sync replicas: (brokerId: 1, endOffset: 19) (brokerId: 2, "
              "endOffset: 19). (kafka.cluster.Partition)")
    route, row = parse_line(raw_log(shrink, log_kind="server"))
    assert (route, row["event"], row["topic"], row["partition"], row["broker_id"]) == (
        "state_change", "isr_shrinking", "test", 0, 0)
    sample07 = next(r["line"] for r in log_fixture_rows() if r["source"].startswith("samples/07_")).split("\n")[0]
    route, row = parse_line(raw_log(f"[2020-09-09 18:37:12,886] DEBUG {sample07} (kafka.request.logger)",
                                    log_kind="request"))
    assert route == "request"
    assert (row["api_name"], row["api_key"], row["api_version"], row["correlation_id"], row["client_id"],
            row["total_time_ms"], row["listener"], row["log_format"]) == (
        "ListOffsets", 2, 5, 8799, "consumer-group-1", 0.085, "PLAINTEXT", "text")


def test_cluster_time_zone() -> None:
    route, row = parse_line(raw_log(cases.apache("INFO", "Broker id=3", "Deleting 3 partition(s).")), "Europe/Berlin")
    assert route == "state_change"
    assert row["ts"].isoformat() == "2021-03-02T07:00:01.010000+00:00"


def test_every_declared_regex_runs_in_polars() -> None:
    """The pattern table in Rust's regex dialect: each one compiles; look-around and back-references are refused."""
    import polars as pl

    from pipelines.parsing import metric_spec as S
    from pipelines.parsing import patterns as P
    from pipelines.parsing.rust_regex import RegexDialectError, to_rust

    regexes = [P.LAYOUT, P.LAYOUT_PREFIXED, P.FOREIGN_APACHE, P.IDENT, P.REQUEST_TEXT, P.NUMERIC, P.TS_STRICT,
               S.PROM_LINE, S.LABEL_RX, *(m.regex for m in P.MESSAGES)]
    probe = pl.Series(["x"])
    for rx in regexes:
        probe.str.contains(to_rust(rx))
    for bad in (r"a(?=b)", r"(?<!a)b", r"(a)\1", r"(?P<x>a)(?P=x)"):
        with pytest.raises(RegexDialectError):
            to_rust(bad)


def test_rows_come_back_in_input_order_when_the_layouts_differ() -> None:
    # a line without a layout and one with it are parsed apart; with a single message group they came back swapped
    valid = "[2018-11-25 04:19:11,284] DEBUG Loading log '__transaction_state-45' (kafka.log.LogManager)"
    routed = parse_all([raw_log("", 0), raw_log(valid, 1)])
    assert [(route, row["source_offset"]) for route, row in routed] == [("rejected", 0), ("unused", 1)]
