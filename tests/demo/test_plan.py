"""The demo's scoring (pure): incidents from timelines, matching alerts, false alarms, the printed table."""

from __future__ import annotations

from dataclasses import dataclass

from planewatch.demo.plan import (
    RUNS,
    Incident,
    ProcessFailure,
    SeenAlert,
    explained_alerts,
    incidents_of,
    last_error,
    match,
    query_restarts,
    render_incidents,
    render_table,
    unexpected_alerts,
)


@dataclass(frozen=True)
class Exp:
    run: str
    event: str
    alert_type: str
    broker_id: int | str | None
    occurrence: int = 1
    cause: str | None = None


def _alert(i: int, type_: str, cluster: str, broker: int | None, seen: int, visible: int | None = None) -> SeenAlert:
    return SeenAlert(f"a{i}", type_, cluster, broker, "critical", f"summary {i}", seen, visible)


EVENTS = [
    {"event": "scenario-started", "ts_ms": 1_000},
    {"event": "storm-started", "ts_ms": 2_000, "broker": 1},
    {"event": "storm-started", "ts_ms": 9_000, "broker": 2},  # the first occurrence marks the incident by default
    {"event": "broker-killed", "ts_ms": 3_000, "broker": 3},
]


def test_incidents_take_the_broker_from_a_field_a_constant_or_any() -> None:
    exp = [Exp("storm", "storm-started", "ACCEPTOR_BLOCKED", "broker"),
           Exp("storm", "broker-killed", "DELAYED_LEADER_AND_ISR", None),
           Exp("storm", "broker-killed", "STALE_BROKER_EPOCH", 2),
           Exp("storm", "never-happened", "LOCK_CONTENTION", 1),
           Exp("other-run", "storm-started", "ACCEPTOR_BLOCKED", "broker"),
           Exp("storm", "storm-started", "NETWORK_PROCESSOR_SATURATED", "broker", occurrence=2),
           Exp("storm", "broker-killed", "LOCK_CONTENTION", None, occurrence=2)]  # there is no second kill
    got = incidents_of("storm", EVENTS, exp)
    assert got == [Incident("storm", "storm-started", 2_000, "ACCEPTOR_BLOCKED", 1),
                   Incident("storm", "broker-killed", 3_000, "DELAYED_LEADER_AND_ISR", None),
                   Incident("storm", "broker-killed", 3_000, "STALE_BROKER_EPOCH", 2),
                   Incident("storm", "storm-started", 9_000, "NETWORK_PROCESSOR_SATURATED", 2)]


def test_match_needs_cluster_type_and_broker_and_takes_the_earliest_seen() -> None:
    inc = [Incident("storm", "storm-started", 2_000, "ACCEPTOR_BLOCKED", 1),
           Incident("bounce", "broker-killed", 3_000, "STALE_BROKER_EPOCH", None)]
    alerts = [_alert(1, "ACCEPTOR_BLOCKED", "storm", 2, 4_000),     # wrong broker
              _alert(2, "ACCEPTOR_BLOCKED", "other", 1, 4_000),     # wrong cluster
              _alert(3, "ACCEPTOR_BLOCKED", "storm", 1, 9_000),
              _alert(4, "ACCEPTOR_BLOCKED", "storm", 1, 7_500),     # earliest right one
              _alert(5, "NETWORK_PROCESSOR_SATURATED", "storm", 1, 3_000)]
    det = match(inc, alerts)
    assert det[0].alert is not None
    assert det[0].alert.alert_id == "a4"
    assert det[0].delay_s == 5.5
    assert det[1].alert is None
    assert det[1].delay_s is None


def test_delay_is_never_negative() -> None:
    inc = [Incident("r", "e", 10_000, "T", None)]
    (d,) = match(inc, [_alert(1, "T", "r", 1, 9_000)])  # seen before the marker event (a precursor alert)
    assert d.delay_s == 0.0


def test_unexpected_alerts_are_the_forbidden_types_of_played_runs() -> None:
    alerts = [_alert(1, "REQUEST_HANDLER_SATURATED", "healthy", 1, 1),
              _alert(2, "LOCK_CONTENTION", "fetcher-lock-async", 2, 2),
              _alert(3, "DELAYED_LEADER_AND_ISR", "fetcher-lock-async", 2, 3),
              _alert(4, "LOCK_CONTENTION", "not-played", 2, 4)]
    forbidden = {"healthy": ("*",), "fetcher-lock-async": ("LOCK_CONTENTION",), "not-played": ("*",)}
    got = unexpected_alerts(alerts, forbidden, ["healthy", "fetcher-lock-async"])
    assert [a.alert_id for a in got] == ["a2", "a1"]


def test_an_alert_put_down_to_a_cause_its_run_allows_is_explained_not_a_false_alarm() -> None:
    """With the control plane a control request that was slow in the handler is a true finding the run allows
    (planewatch.kafka.expected.EXPLAINED); the same alert type queued behind data is still a false alarm there."""
    run = "kafka-produce-backlog-with-control-plane"
    alerts = [_alert(1, "DELAYED_LEADER_AND_ISR", run, 2, 1), _alert(2, "DELAYED_LEADER_AND_ISR", run, 1, 2),
              _alert(3, "DELAYED_LEADER_AND_ISR", run, 3, 3)]
    causes = {"a1": "SLOW_HANDLER", "a2": "QUEUED_BEHIND_DATA"}  # a3: no incident yet
    forbidden = {run: ("DELAYED_LEADER_AND_ISR",)}
    explained = {run: ("SLOW_HANDLER",)}
    assert [a.alert_id for a in unexpected_alerts(alerts, forbidden, [run], causes, explained)] == ["a2", "a3"]
    got = explained_alerts(alerts, forbidden, [run], causes, explained)
    assert [a.alert_id for a in got] == ["a1"]
    text = render_table([], [], causes=causes, explained=got)
    assert "1 alert(s) outside the scenarios' incidents, each put down to a cause its run allows:" in text
    assert f"explained: {run} DELAYED_LEADER_AND_ISR broker 2 [incident: SLOW_HANDLER]: summary 1" in text


def test_table_lists_every_incident_and_the_false_alarms() -> None:
    inc = [Incident("storm", "storm-started", 2_000, "ACCEPTOR_BLOCKED", 1, "CONNECTION_STORM"),
           Incident("bounce", "broker-killed", 3_000, "STALE_BROKER_EPOCH", None)]
    det = match(inc, [_alert(4, "ACCEPTOR_BLOCKED", "storm", 1, 7_500, 6_300)])
    text = render_table(det, [_alert(9, "LOCK_CONTENTION", "healthy", 3, 1)],
                        causes={"a4": "CONNECTION_STORM", "a9": "LOCK_CONTENTION"})
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["run", "(cluster)"]
    assert lines[0].rstrip().endswith("delay s  from visible s  incident cause")
    assert "ACCEPTOR_BLOCKED broker 1" in lines[2]
    # from the marker; from the sample that crossed the threshold; the incident's cause (GET /incidents)
    assert lines[2].split()[-3:] == ["5.5", "1.2", "CONNECTION_STORM"]
    assert "NOT DETECTED" in lines[3]
    assert " any " in lines[3]
    assert "1 of 2 injected incidents caught; 1 alert(s) where none was expected" in text
    assert "unexpected: healthy LOCK_CONTENTION broker 3 [incident: LOCK_CONTENTION]: summary 9" in text
    assert "1 of 1 incidents that state their cause put down to it" in text
    wrong = render_table(det, [], causes={"a4": "BROKER_SATURATED"})
    assert "BROKER_SATURATED (expected CONNECTION_STORM)" in wrong
    assert "0 of 1 incidents that state their cause put down to it" in wrong


def test_runs_follow_the_issue_order() -> None:
    names = [r.name for r in RUNS]
    assert names[0] == "healthy"
    assert names[-1] == "kraft-metadata-lag"
    assert names.index("kafka-produce-backlog-without-control-plane") < names.index(
        "kafka-produce-backlog-with-control-plane")
    assert names.index("fetcher-lock-locked") < names.index("fetcher-lock-async")


def test_kip291_and_kraft_run_on_apache_kafka_and_kafka6974_on_the_reference_broker() -> None:
    from planewatch.kafka.cluster import KafkaSetup
    from planewatch.kafka.scenarios import scenario_names

    by_name = {r.name: r for r in RUNS}
    for name in ("kafka-produce-backlog-without-control-plane", "kafka-produce-backlog-with-control-plane"):
        assert by_name[name].engine == "Apache Kafka 3.9.1"
        assert by_name[name].scenario_name in scenario_names(KafkaSetup("3.9.1"))
    kraft = KafkaSetup(by_name["kraft-metadata-lag"].kafka or "")
    assert by_name["kraft-metadata-lag"].scenario_name in scenario_names(kraft)
    assert by_name["fetcher-lock-locked"].engine == by_name["fetcher-lock-async"].engine == "reference"


def test_table_names_the_engine_of_each_run() -> None:
    inc = [Incident("kraft", "controller-paused", 2_000, "METADATA_APPLY_LAG", None)]
    text = render_table(match(inc, []), [], {"kraft": "Apache Kafka 4.4.0"})
    assert text.splitlines()[0].split()[2] == "engine"
    assert "Apache Kafka 4.4.0" in text.splitlines()[2]


def test_extra_runs_are_selectable_but_not_default() -> None:
    import argparse

    import pytest

    from planewatch.commands.demo import configure
    from planewatch.demo.plan import EXTRA_RUNS

    parser = argparse.ArgumentParser()
    configure(parser)
    assert "controller-failover" not in parser.parse_args([]).runs
    assert "controller-failover" in [r.name for r in EXTRA_RUNS]
    assert parser.parse_args(["--runs", "healthy,controller-failover"]).runs == ("healthy", "controller-failover")
    with pytest.raises(SystemExit):
        parser.parse_args(["--runs", "no-such-run"])


def test_the_visible_moment_is_the_alerts_started_at() -> None:
    row = {"alert_id": "x", "type": "ACCEPTOR_BLOCKED", "cluster": "storm", "broker_id": 1, "severity": "critical",
           "summary": "s", "started_at": "2026-11-27T06:00:00.250000Z"}
    seen = SeenAlert.from_api(row, 1_795_759_203_000)
    assert seen.visible_ms == 1_795_759_200_250
    (d,) = match([Incident("storm", "storm-started", 1_795_759_190_000, "ACCEPTOR_BLOCKED", 1)], [seen])
    assert (d.delay_s, d.visible_delay_s) == (13.0, 2.75)
    assert SeenAlert.from_api({**row, "started_at": None}, 1).visible_ms is None
    assert SeenAlert.from_api({**row, "started_at": "not a time"}, 1).visible_ms is None


def test_query_restarts_are_read_from_the_pipelines_log() -> None:
    lines = ["2026-11-27 10:00:00,000 INFO jobs.run.runner: started",
             "2026-11-27 10:01:00,000 WARNING jobs.run.runner: ingest logs failed (ArrowNotImplementedError: Function "
             "'equal' has no kernel matching input types (string, string_view)); restart 1 from the checkpoint"]
    got = query_restarts(lines)
    assert got == [ProcessFailure("pipeline", "logs query failed (restart 1)",
                                  "ArrowNotImplementedError: Function 'equal' has no kernel matching input types "
                                  "(string, string_view)")]


def test_a_dead_childs_error_is_its_last_exception_line() -> None:
    lines = ["starting", "Traceback (most recent call last):", '  File "x.py", line 1', "RuntimeError: boom", ""]
    assert last_error(lines) == "RuntimeError: boom"


def test_table_footer_names_each_failure_of_the_demos_processes() -> None:
    text = render_table([], [], failures=[ProcessFailure("api", "exited with code 1", "OSError: port taken")])
    assert text.splitlines()[-2:] == ["the demo did not run cleanly: 1 failure(s) of its own processes",
                                      "  api: exited with code 1: OSError: port taken"]


def test_the_incident_table_counts_the_alerts_whose_incident_says_everything() -> None:
    full = {"cause": "CONNECTION_STORM", "impact": "new connections waited", "baseline": "its peers' median 95%",
            "action": "bound max.connections"}
    incidents = [{"cluster": "storm", "broker_id": 1, "alerts": 2, "severity": "critical", "started_at": "t1",
                  "alert_types": ["ACCEPTOR_BLOCKED", "NETWORK_PROCESSOR_SATURATED"], "alert_ids": ["a1", "a2"],
                  **full},
                 {"cluster": "bounce", "broker_id": 3, "alerts": 1, "severity": "warning", "started_at": "t2",
                  "alert_types": ["STALE_BROKER_EPOCH"], "alert_ids": ["a3"], **full, "baseline": None},
                 {"cluster": "not-this-demo", "broker_id": 1, "alert_ids": ["a9"], **full}]
    alerts = [_alert(1, "ACCEPTOR_BLOCKED", "storm", 1, 1), _alert(2, "NETWORK_PROCESSOR_SATURATED", "storm", 1, 1),
              _alert(3, "STALE_BROKER_EPOCH", "bounce", 3, 1), _alert(4, "LOCK_CONTENTION", "bounce", 2, 1)]
    text = render_incidents(incidents, alerts, ["storm", "bounce"])
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["run", "(cluster)", "broker", "incident"]
    assert [line.split()[-1] for line in lines[2:4]] == ["-", "baseline"]
    assert "not-this-demo" not in text
    assert text.endswith("2 incident(s) group 4 alert(s); 2 of 4 belong to an incident whose cause, impact, baseline "
                         "and action are filled")
