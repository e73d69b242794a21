"""The fleet benchmark's load is what planewatch reads from a shipper: rsyslog envelopes that the `host` mapping
names, lines the parsers recognise, requests the pairing pairs (the failover's slow one among them)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from benchmarks.fleet_load import FAILOVER, FAILOVER_BROKERS, INCIDENT_S, Fleet, fleet_specs
from jobs.sources.envelopes import MAPPING_PRESETS, open_envelopes
from pipelines.detection.config import DetectionConfig
from pipelines.detection.events import pairing_events
from pipelines.detection.pairing_groups import pairing_params, step_groups
from pipelines.parsing.engine import run_engine
from schemas.inputs import Envelope
from schemas.tables import RAW_LOGS

T0 = 1_800_000_000.0


def _raw(records: list[tuple[bytes, bytes]]) -> pa.Table:
    values = [v for _, v in records]
    n = len(values)
    opened = open_envelopes(values, [None] * n, ["kafka:fleet/0"] * n, list(range(n)), Envelope.RSYSLOG,
                            MAPPING_PRESETS["host"], None, "default")
    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "cluster": opened["cluster"].to_list(), "broker_id": pa.array(opened["broker_id"].to_list(), pa.int32()),
        "log_kind": opened["kind"].to_list(), "line": opened["line"].to_list(),
        "line_bytes": opened["line_bytes"].to_list(), "source": opened["source"].to_list(),
        "source_offset": opened["source_offset"].to_list(), "ingest_ts": [now] * n, "batch_id": [0] * n,
        "date": [now.date()] * n,
    }).cast(RAW_LOGS.to_arrow())


def _paired(records: list[tuple[bytes, bytes]]) -> list[dict]:
    silver = run_engine(_raw(records), "logs").silver
    events = pairing_events(silver["state_change_events"], silver["request_events"])
    rows, _ = step_groups(events, {}, {}, pairing_params(DetectionConfig()))
    return rows


def test_the_fleet_has_the_asked_brokers_and_the_burst_clusters() -> None:
    specs = fleet_specs(2000)
    assert sum(s.brokers for s in specs) == 2000
    assert (specs[0].name, specs[0].brokers) == (FAILOVER, FAILOVER_BROKERS)
    assert len({s.name for s in specs}) == len(specs)


def test_steady_lines_name_their_cluster_and_broker_and_pair_with_their_incidents() -> None:
    fleet = Fleet(fleet_specs(150), incident_every_s=20.0)
    lines = fleet.lines(T0, T0 + 120)
    records = fleet.records(lines)
    raw = _raw(records)
    # keyed as rsyslog keys them (planewatch_key): a file's lines in one partition
    assert [k.decode() for k, _ in records] == raw.column("source").to_pylist()
    assert raw.column("cluster").to_pylist() == [x[1] for x in lines]
    assert raw.column("broker_id").to_pylist() == [x[2] for x in lines]
    rows = _paired(fleet.records(lines))
    slow = {(r["cluster"], r["broker_id"]) for r in rows if (r["end_to_end_ms"] or 0) >= INCIDENT_S * 1000}
    # every incident whose lines all fell in the window is a slow request; no other request is
    assert slow == {(i.cluster, i.broker) for i in fleet.incidents if i.finished_at < T0 + 120}
    assert len(slow) >= 4
    assert {r["status"] for r in rows} == {"completed"}


def test_the_failover_burst_pairs_every_brokers_request_and_its_slow_one() -> None:
    fleet = Fleet(fleet_specs(2000), incident_every_s=0)
    burst = fleet.failover(T0)
    assert len(burst) > 70_000
    rows = [r for r in _paired(fleet.records(burst)) if r["request"] == "LeaderAndIsr"]
    assert len(rows) == FAILOVER_BROKERS
    assert {r["controller_epoch"] for r in rows} == {4}
    (slow,) = fleet.incidents
    assert [r["broker_id"] for r in rows if r["end_to_end_ms"] >= INCIDENT_S * 1000] == [slow.broker]


def test_a_new_phase_places_its_incidents_from_its_own_start_not_back_dated_over_the_gap() -> None:
    fleet, t0 = Fleet(fleet_specs(200), incident_every_s=20.0), 1_800_000_000.0
    fleet.lines(t0, t0 + 60)  # a backlog's phase: incidents every 20 s
    assert fleet.incidents
    fleet.forget_incidents()
    later = t0 + 600  # the next phase starts ten minutes on: none of the gap's incidents come out with it
    lines = fleet.lines(later, later + 30)
    assert [i.finished_at for i in fleet.incidents] == [later + 10 + INCIDENT_S + 1]
    assert min(x[0] for x in lines) >= later
