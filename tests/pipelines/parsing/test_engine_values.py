"""The engine on values no Kafka metric has, on duplicate samples of a series, and on records cut at their reader's
length cap (no Spark): each record lands in silver, quarantine (with a reason) or unused, and the batch reconciles."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from pipelines.parsing.engine import run_engine
from pipelines.parsing.metric_spec import REASONS
from pipelines.parsing.stages import CUT_REASON, cut_by_reader
from pipelines.quality import load_suite
from schemas.tables import RAW_LOGS, RAW_METRICS
from tests.pipelines.parsing.parse_helpers import raw_log, raw_metric

T = 1614672000000  # 2021-03-02 08:00:00 UTC, epoch ms
MBEAN = "kafka.network:type=RequestChannel,name=RequestQueueSize"
SUITES = {t: load_suite(t) for t in ("metric_samples", "state_change_events", "request_events")}


def engine(rows: list[dict], family: str = "metrics"):
    table = RAW_METRICS if family == "metrics" else RAW_LOGS
    out = run_engine(pa.Table.from_pylist(rows, table.to_arrow()), family, suites=SUITES)
    silver = sum(t.num_rows for t in out.silver.values())
    assert len(rows) == silver + out.quarantine.num_rows + out.unused.num_rows  # the batch reconciles
    return out


def raw(lines: list[str], source: str = "scrape-1.prom", broker_id: int = 2) -> list[dict]:
    return [raw_metric(line, i, None, broker_id, source) for i, line in enumerate(lines)]


def test_duplicate_samples_of_a_series_at_one_time_keep_the_first_and_count_the_rest_unused():
    rows = raw([
        f'kafka_network_requestmetrics_requestqueuetimems{{request="LeaderAndIsr",quantile="0.99"}} 7 {T}',
        f'kafka_network_requestmetrics_requestqueuetimems{{quantile="0.99",request="LeaderAndIsr"}} 9 {T}',  # dup
        f'kafka_network_requestmetrics_requestqueuetimems{{request="LeaderAndIsr",quantile="0.5"}} 3 {T}',
        f"kafka_network_requestchannel_requestqueuesize 4 {T}",
        f"kafka_network_requestchannel_requestqueuesize 5 {T + 15_000}",  # the next scrape: a new sample
        f'{{"ts": {T}, "mbean": "{MBEAN}", "attribute": "Value", "value": 4}}',
        f'{{"ts": {T}, "mbean": "kafka.network:name=RequestQueueSize,type=RequestChannel", "value": 4}}',  # dup:
        # the same MBean, its properties in another order, its attribute the gauge's default
        f'{{"ts": {T}, "broker_id": 3, "mbean": "{MBEAN}", "value": 4}}',  # another broker's series
        f'{{"ts": {T}, "mbean": "{MBEAN}", "attribute": "Count", "value": 4}}',  # another attribute: another series
        "kafka_network_requestchannel_requestqueuesize oops",  # rejected: never a sample a later line duplicates
    ])
    rows += raw([f"kafka_network_requestchannel_requestqueuesize 4 {T}"], source="scrape-1-shipped-again.prom")
    out = engine(rows)
    samples = out.silver["metric_samples"].to_pylist()
    assert [(r["source_offset"], r["value"]) for r in samples] == [(0, 7.0), (2, 3.0), (3, 4.0), (4, 5.0), (5, 4.0),
                                                                   (7, 4.0), (8, 4.0)]
    unused = out.unused.to_pylist()
    assert [(r["source"], r["source_offset"], r["reason"]) for r in unused] == [
        ("scrape-1.prom", 1, REASONS["dup_sample"]), ("scrape-1.prom", 6, REASONS["dup_sample"]),
        ("scrape-1-shipped-again.prom", 0, REASONS["dup_sample"])]
    assert out.counts["unused"] == 3
    assert out.quarantine.column("reason").to_pylist() == [REASONS["not_number"]]


def test_samples_without_their_own_time_are_duplicates_only_within_their_source():
    # no timestamp: each sample takes the time it was read, the same for two scrape files read together
    out = engine(raw(["kafka_network_requestchannel_requestqueuesize 1",
                      "kafka_network_requestchannel_requestqueuesize 2"])  # one exposition, one series twice
                 + raw(["kafka_network_requestchannel_requestqueuesize 3"], source="scrape-2.prom"))
    assert out.silver["metric_samples"].column("value").to_pylist() == [1.0, 3.0]
    assert out.unused.column("reason").to_pylist() == [REASONS["dup_sample"]]


def test_non_finite_and_impossible_values_are_quarantined_by_the_quality_rules():
    out = engine(raw([
        f"kafka_network_requestchannel_requestqueuesize +Inf {T}",
        f"kafka_network_requestchannel_requestqueuesize 1e12 {T + 1}",
        f'kafka_server_brokertopicmetrics_bytesinpersec_count{{topic="t"}} -Inf {T}',
        f'kafka_server_brokertopicmetrics_bytesinpersec_count{{topic="t"}} 1e300 {T + 1}',
        f'kafka_server_brokertopicmetrics_bytesinpersec_count{{topic="t"}} 8.1e15 {T + 2}',
        f"kafka_network_requestchannel_requestqueuesize NaN {T + 2}",  # not measured: recognised, unused
    ]))
    assert out.silver["metric_samples"].column("value").to_pylist() == [8.1e15]
    q = out.quarantine.to_pylist()
    assert [(r["stage"], r["reason"].split("(")[1].split(",")[0]) for r in q] == [("validate", "value")] * 4
    assert [r["record"].split('"value":')[1].split(",")[0] for r in q] == ['"Infinity"', "1000000000000.0",
                                                                          '"-Infinity"', "1e+300"]
    assert out.unused.column("reason").to_pylist() == [REASONS["nan_value"]]


def test_a_record_cut_at_its_readers_length_cap_is_quarantined_with_that_reason():
    line = "[2021-03-02 08:00:01,010] INFO [Broker id=4] Deleting 3 partition(s). (state.change.logger)"
    whole = raw_log(line, 0, broker_id=4)
    cut = {**raw_log(line[:40], 100, broker_id=4), "line_bytes": 3_000_000}  # a 3 MB line, its first part read
    log_out = engine([whole, cut], "logs")
    assert log_out.silver["state_change_events"].num_rows == 1
    (q,) = log_out.quarantine.to_pylist()
    assert (q["source_offset"], q["stage"], q["reason"], q["record"]) == (100, "parse", CUT_REASON, line[:40])
    metric = f"kafka_network_requestchannel_requestqueuesize 4 {T}"
    m_out = engine([{**raw_metric(metric, 0), "line_bytes": 300_000},  # cut: no sample a later one duplicates
                    {**raw_metric(metric, 50), "line_bytes": len(metric) + 1}])  # its CR dropped: whole
    assert m_out.silver["metric_samples"].column("source_offset").to_pylist() == [50]
    assert [(r["stage"], r["reason"]) for r in m_out.quarantine.to_pylist()] == [("parse", CUT_REASON)]


def test_cut_by_reader_never_flags_a_whole_record():
    frame = pl.DataFrame({
        # whole; CR LF dropped; an invalid byte replaced; two lines with their CRs; cut; cut; no line
        "line": ["abc", "abc", "a\ufffdb", "first\nsecond", "first\nsecond", "abc", None],
        "line_bytes": [3, 5, 3, 14, 17, 6, 9],
    })
    assert frame.select(cut_by_reader(pl.col("line"), pl.col("line_bytes"))).to_series().to_list() == [
        False, False, False, False, True, True, False]
