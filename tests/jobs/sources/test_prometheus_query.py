"""The pure half of reading the operator's Prometheus: label presets (each stack's labels), the window, each target's
samples after its position as Prometheus text."""

from __future__ import annotations

import json

import pytest

from jobs.sources.prometheus_query import (
    DEFAULT_MATCH,
    LATE_VISIBLE_MS,
    MIN_WINDOW_MS,
    START_SERIES,
    LabelError,
    Window,
    label_rules,
    map_target,
    next_until,
    rules_json,
    target_key,
    target_samples,
    window,
)

URL = "http://prom:9090"


@pytest.mark.parametrize(("preset", "labels", "expected"), [
    # a scrape config's labels (planewatch's demo writes them)
    ("labels", {"job": "kafka", "instance": "10.0.0.5:7071", "cluster": "prod-eu", "broker_id": "4"}, ("prod-eu", 4)),
    ("labels", {"job": "kraft", "instance": "c1:7071", "cluster": "prod-eu", "node_id": "3001"}, ("prod-eu", 3001)),
    # the jmx_exporter agent scraped by host name: `kafka-07.prod-us:7071`, or a short name with a cluster label
    ("jmx_exporter", {"job": "kafka", "instance": "kafka-07.prod-us:7071"}, ("prod-us", 7)),
    ("jmx_exporter", {"job": "kafka", "instance": "kafka-7:7071", "cluster": "prod-eu"}, ("prod-eu", 7)),
    ("jmx_exporter", {"job": "kafka", "instance": "broker12.dc1.example.com:9404", "env": "staging"}, ("staging", 12)),
    # an IP address names no broker
    ("jmx_exporter", {"job": "kafka", "instance": "10.0.0.5:7071", "cluster": "prod"}, ("prod", None)),
    # Strimzi's PodMonitor: labelmap of the pod's strimzi.io labels, the pod name (node pools: <cluster>-<pool>-<id>)
    ("strimzi", {"job": "kafka/kafka-resources-metrics", "instance": "10.1.2.3:9404", "namespace": "kafka",
                 "strimzi_io_cluster": "my-cluster", "strimzi_io_kind": "Kafka", "pod": "my-cluster-brokers-5"},
     ("my-cluster", 5)),
    ("strimzi", {"strimzi_io_cluster": "my-cluster", "kubernetes_pod_name": "my-cluster-kafka-0"}, ("my-cluster", 0)),
    # Confluent's jmx-monitoring-stacks: env, and hostname from the target address
    ("confluent", {"job": "kafka-broker", "instance": "kafka1:1234", "env": "dev", "hostname": "kafka1"}, ("dev", 1)),
    ("confluent", {"job": "kafka-broker", "instance": "kafka3:1234", "env": "dev"}, ("dev", 3)),
])
def test_each_preset_maps_its_stacks_labels(preset: str, labels: dict[str, str],
                                            expected: tuple[str | None, int | None]) -> None:
    assert map_target(labels, label_rules([preset]), None) == expected


def test_the_pipelines_cluster_names_every_target_and_rules_read_back_from_json() -> None:
    rules = label_rules(["jmx_exporter", {"label": "role", "pattern": r"^(?P<cluster>[a-z]+)-"}])
    assert map_target({"instance": "kafka-2.east:7071"}, rules, "fixed") == ("fixed", 2)
    assert label_rules(json.loads(rules_json(rules))) == rules


@pytest.mark.parametrize(("items", "message"), [
    (["nope"], "unknown label preset 'nope'"),
    ([{"label": "pod", "pattern": "("}], "bad regex"),
    ([{"label": "pod", "pattern": "x"}], "has no"),
    ([{"pattern": "(?P<broker>1)"}], "a label rule is a preset name or"),
])
def test_bad_rules_are_clear_errors(items: list[object], message: str) -> None:
    with pytest.raises(LabelError, match=message):
        label_rules(items)


def test_the_window_looks_back_for_late_scrapes_moves_on_and_is_bounded() -> None:
    # live: from LATE_VISIBLE_MS before the horizon to now
    assert window(100_000, 110_000, 600_000) == Window(100_000 - LATE_VISIBLE_MS, 110_000)
    # a catch-up: ten minutes at a time, moving on by the window's end (a gap in Prometheus's data too)
    w = window(0, 3_600_000, 600_000)
    assert w == Window(-LATE_VISIBLE_MS, 600_000 - LATE_VISIBLE_MS)
    assert next_until(w, 0, 3_600_000, None) == w.end_ms
    assert window(w.end_ms, 3_600_000, 600_000).start_ms > w.start_ms
    # at the live edge the horizon is the newest sample read (Prometheus's clock), never back
    live = window(100_000, 110_000, 600_000)
    assert next_until(live, 100_000, 110_000, 108_000) == 108_000
    assert next_until(live, 100_000, 110_000, None) == 100_000
    assert next_until(live, 100_000, 110_000, 90_000) == 100_000
    # never narrower than MIN_WINDOW_MS (it would not move on), never negative
    assert window(0, 10**9, 1).end_ms - window(0, 10**9, 1).start_ms == MIN_WINDOW_MS
    assert window(5_000, 4_000, 600_000) == Window(5_000 - LATE_VISIBLE_MS, 4_000)


def test_a_target_is_named_by_job_instance_and_the_labels_the_rules_read() -> None:
    labels = {"job": "kafka", "instance": "10.0.0.1:7071", "cluster": "eu", "broker_id": "1", "topic": "t"}
    assert target_key(URL, labels) == f"{URL}#job=kafka,instance=10.0.0.1:7071"
    assert target_key(URL, labels, ("cluster", "broker_id", "node_id")) == (
        f"{URL}#job=kafka,instance=10.0.0.1:7071,broker_id=1,cluster=eu")


def _series(name: str, labels: dict[str, str], points: list[tuple[float, str]]) -> dict[str, object]:
    return {"metric": {"__name__": name, **labels}, "values": [[t, v] for t, v in points]}


def test_samples_after_each_targets_position_as_prometheus_text() -> None:
    a = {"job": "kafka", "instance": "kafka-1.prod:7071"}
    b = {"job": "kafka", "instance": "kafka-2.prod:7071"}
    series = [
        _series("kafka_server_replicamanager_underreplicatedpartitions", a, [(100.0, "0"), (115.0, "2")]),
        _series("kafka_network_requestmetrics_requestqueuetimems", {**a, "request": 'Leader"And\\Isr',
                                                                    "quantile": "0.99"}, [(115.0, "NaN")]),
        _series("kafka_server_replicamanager_underreplicatedpartitions", b, [(100.0, "0"), (115.0, "1")]),
        _series("kafka_server_replicamanager_underreplicatedpartitions", {"job": "kafka", "instance": "10.0.0.9:1"},
                [(115.0, "7")]),
    ]
    rules = label_rules(["jmx_exporter"])
    # target a was read up to 100 s; b and the unmapped one are new (read from the window's start, 90 s)
    got = target_samples(URL, series, {target_key(URL, a): 100_000}, 90_000, rules, None)
    ta, tb = got[target_key(URL, a)], got[target_key(URL, b)]
    assert (ta.cluster, ta.broker_id, ta.samples, ta.last_ms) == ("prod", 1, 2, 115_000)
    assert ta.text == (
        'kafka_network_requestmetrics_requestqueuetimems{quantile="0.99",request="Leader\\"And\\\\Isr"} NaN 115000\n'
        "kafka_server_replicamanager_underreplicatedpartitions 2 115000\n")
    assert (tb.samples, tb.last_ms) == (2, 115_000)
    assert tb.text.splitlines()[0] == "kafka_server_replicamanager_underreplicatedpartitions 0 100000"
    unmapped = got[target_key(URL, {"job": "kafka", "instance": "10.0.0.9:1"})]
    assert (unmapped.cluster, unmapped.broker_id, unmapped.samples) == (None, None, 1)
    assert unmapped.labels == {"job": "kafka", "instance": "10.0.0.9:1"}
    # the same samples in another order: the same bytes (a replayed read yields the batch it logged)
    again = target_samples(URL, list(reversed(series)), {target_key(URL, a): 100_000}, 90_000, rules, None)
    assert {k: t.text for k, t in again.items()} == {k: t.text for k, t in got.items()}


def test_a_brokers_process_start_comes_with_its_series_and_a_process_with_nothing_else_is_not_a_broker() -> None:
    broker = {"job": "kafka", "instance": "kafka-1.prod:7071"}
    prometheus = {"job": "prometheus", "instance": "localhost:9090"}
    series = [
        _series("kafka_server_replicamanager_underreplicatedpartitions", broker, [(115.0, "0")]),
        _series(START_SERIES, broker, [(115.0, "1.7e9")]),
        _series(START_SERIES, prometheus, [(115.0, "1.6e9")]),
    ]
    got = target_samples(URL, series, {}, 90_000, label_rules(["jmx_exporter"]), "prod")
    assert list(got) == [target_key(URL, broker)]  # Prometheus's own start: no record, not an unmapped target
    assert got[target_key(URL, broker)].text.splitlines() == [
        "kafka_server_replicamanager_underreplicatedpartitions 0 115000", "process_start_time_seconds 1.7e9 115000"]
    assert DEFAULT_MATCH == '{__name__=~"kafka_.+|process_start_time_seconds"}'
