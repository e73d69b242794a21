"""jobs.sources.envelopes: each shipper's documented record format opened to its line, cluster, broker, kind and
origin; records that cannot be opened become source errors with their reason; the engine quarantines them at
stage `source` and the counts reconcile."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pytest

from jobs.ingest.bronze import arrow_to_raw
from jobs.run.settings import SettingsError, load_settings
from jobs.sources.envelopes import MAX_RECORD_BYTES, MappingError, open_envelopes, rules_from_config, rules_json
from jobs.sources.kafka_records import raw_kafka_batch
from pipelines.parsing.engine import run_engine
from schemas.inputs import Envelope

STATE = ("[2026-12-06 10:36:05,865] INFO [Broker id=2] Transitioning 2 partition(s) to local leaders. "
         "(state.change.logger)")
SERVER = ("[2026-12-06 10:36:05,868] INFO [Partition roll-0 broker=2] ISR updated to 3,1,2  and version updated to 2 "
          "(kafka.cluster.Partition)")
# Strimzi's console layout (log4j1: %d{ISO8601} %p %m (%c) [%t])
STRIMZI = ("2026-12-06 10:36:05,865 INFO [Broker id=3] Transitioning 2 partition(s) to local leaders. "
           "(state.change.logger) [kafka-0-metadata-loader-event-handler]")


def opened(records: list[dict[str, Any] | bytes], envelope: Envelope, rules: list[Any] | None = None,
           cluster: str | None = None) -> list[dict[str, Any]]:
    values = [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records]
    n = len(values)
    got = open_envelopes(values, [None] * n, ["kafka:logs/0"] * n, list(range(100, 100 + n)), envelope,
                         rules_from_config(rules or []), cluster, "default")
    return got.to_dicts()


def test_rsyslog_with_the_projects_template() -> None:
    (r,) = opened([{"host": "kafka-07.prod-us", "file": "/var/log/kafka/state-change.log", "offset": 4096,
                    "line": STATE}], Envelope.RSYSLOG, ["host"])
    assert r == {"cluster": "prod-us", "broker_id": 7, "kind": "state-change", "line": STATE,
                 "line_bytes": len(STATE), "source": "kafka-07.prod-us:/var/log/kafka/state-change.log",
                 "source_offset": 4096}


def test_vector_file_source_has_no_offset_so_the_kafka_record_is_the_origin() -> None:
    (r,) = opened([{"file": "/opt/kafka/logs/server.log", "host": "kafka-2.prod-eu", "message": SERVER,
                    "source_type": "file", "timestamp": "2026-12-06T10:36:05.868Z"}], Envelope.VECTOR, ["host"])
    assert (r["cluster"], r["broker_id"], r["kind"], r["source"], r["source_offset"]) == (
        "prod-eu", 2, "server", "kafka:logs/0", 100)


def test_vector_kubernetes_logs_of_a_strimzi_pod() -> None:
    (r,) = opened([{"file": "/var/log/pods/kafka_prod-eu-kafka-3_5d1e/kafka/0.log", "message": STRIMZI,
                    "kubernetes": {"container_name": "kafka", "pod_name": "prod-eu-kafka-3", "pod_namespace": "kafka",
                                   "pod_labels": {"strimzi.io/cluster": "prod-eu", "strimzi.io/kind": "Kafka"},
                                   "pod_node_name": "node-1"},
                    "source_type": "kubernetes_logs", "stream": "stdout"}], Envelope.VECTOR, ["strimzi"])
    # the console mixes every logger: the kind comes from the line's logger
    assert (r["cluster"], r["broker_id"], r["kind"], r["line"]) == ("prod-eu", 3, "state-change", STRIMZI)


def test_fluent_bit_tail_with_the_kubernetes_filter_and_node_pools() -> None:
    (r,) = opened([{"@timestamp": 1796553365.865, "log": STRIMZI,
                    "file": "/var/log/containers/prod-eu-broker-3_kafka.log", "offset": 5123,
                    "kubernetes": {"pod_name": "prod-eu-broker-3", "namespace_name": "kafka",
                                   "container_name": "kafka", "host": "node-2",
                                   "labels": {"strimzi.io/cluster": "prod-eu", "strimzi.io/pool-name": "broker"}}}],
                  Envelope.FLUENT_BIT, ["strimzi"])
    assert (r["cluster"], r["broker_id"], r["source"], r["source_offset"]) == (
        "prod-eu", 3, "node-2:/var/log/containers/prod-eu-broker-3_kafka.log", 5123)


def test_filebeat_ecs_fields() -> None:
    (r,) = opened([{"@timestamp": "2026-12-06T10:36:05.868Z", "message": SERVER,
                    "log": {"offset": 20480, "file": {"path": "/opt/kafka/logs/server.log"}},
                    "host": {"name": "kafka07.prod-us"}, "input": {"type": "filestream"}, "ecs": {"version": "8.0.0"}}],
                  Envelope.FILEBEAT, ["host"])
    assert (r["cluster"], r["broker_id"], r["kind"], r["source"], r["source_offset"]) == (
        "prod-us", 7, "server", "kafka07.prod-us:/opt/kafka/logs/server.log", 20480)


def test_an_otlp_json_record_carries_several_log_records() -> None:
    def attr(k: str, v: str) -> dict[str, Any]:
        return {"key": k, "value": {"stringValue": v}}

    rec = {"resourceLogs": [{"resource": {"attributes": [attr("host.name", "kafka-1.prod")]}, "scopeLogs": [{
        "scope": {}, "logRecords": [
            {"timeUnixNano": "1796553365865000000", "body": {"stringValue": STATE},
             "attributes": [attr("log.file.path", "/var/log/kafka/state-change.log"),
                            {"key": "log.file.record_number", "value": {"intValue": "41"}}]},
            {"body": {"stringValue": SERVER}, "attributes": [attr("log.file.path", "/var/log/kafka/server.log")]}]}]}]}
    a, b = opened([rec], Envelope.OTEL, ["host"])
    assert (a["line"], a["kind"], a["source"], a["source_offset"]) == (
        STATE, "state-change", "kafka-1.prod:/var/log/kafka/state-change.log", 41)
    # no record number: the Kafka record's offset, and its index in the record
    assert (b["line"], b["kind"], b["cluster"], b["broker_id"], b["source"], b["source_offset"]) == (
        SERVER, "server", "prod", 1, "kafka:logs/0", 100 * (1 << 20) + 1)


def test_what_cannot_be_opened_is_a_source_error_with_its_reason() -> None:
    rows = opened([b"{broken", {"host": "kafka-1.prod", "file": "/x/server.log"},
                   {"host": "elastic-9", "file": "/x/server.log", "line": SERVER},
                   {"host": "kafka-1.prod", "file": "/x/server.log", "line": SERVER}], Envelope.RSYSLOG, ["host"])
    assert [r["kind"] for r in rows] == ["source-error", "source-error", "source-error", "server"]
    assert [r["line"].split("\n")[0] for r in rows[:3]] == [
        "rsyslog envelope: not a JSON object", "rsyslog envelope: no log line in its fields",
        "no mapping rule names the cluster of host=elastic-9 pod=- file=/x/server.log key=-"]
    assert rows[0]["line"].endswith("{broken")  # the head of the record follows its reason


@pytest.mark.parametrize("envelope", [Envelope.RSYSLOG, Envelope.RAW])
def test_a_record_over_the_size_limit_is_a_source_error_not_opened(envelope: Envelope) -> None:
    big = {"host": "kafka-1.prod", "file": "/x/server.log", "line": SERVER + "x" * MAX_RECORD_BYTES}
    value = json.dumps(big).encode() if envelope == Envelope.RSYSLOG else big["line"].encode()
    rows = opened([value, {"host": "kafka-1.prod", "file": "/x/server.log", "line": SERVER}], envelope, ["host"])
    assert rows[0]["kind"] == "source-error"
    assert rows[0]["line"].startswith(f"record of {len(value)} bytes, over the {MAX_RECORD_BYTES}-byte limit")
    assert len(rows[0]["line"]) < 1000  # the reason and the record's head only
    assert rows[1]["kind"] != "source-error"


def test_the_pipelines_cluster_setting_names_every_records_cluster() -> None:
    (r,) = opened([{"host": "kafka-3.whatever", "file": "/x/server.log", "line": SERVER}], Envelope.RSYSLOG,
                  [{"field": "host", "pattern": r"kafka-(?P<broker>\d+)"}], cluster="prod")
    assert (r["cluster"], r["broker_id"], r["kind"]) == ("prod", 3, "server")


def test_a_raw_record_is_its_line_and_its_key_names_the_broker() -> None:
    got = open_envelopes([STATE.encode() + b"\n", b"\xffbad " + SERVER.encode()], [b"broker-4", b"5"],
                         ["kafka:logs/3"] * 2, [7, 8], Envelope.RAW, (), None, "default").to_dicts()
    assert [(r["cluster"], r["broker_id"], r["kind"], r["source_offset"]) for r in got] == [
        ("default", 4, "state-change", 7), ("default", 5, "unknown", 8)]
    assert got[0]["line"] == STATE
    assert got[1]["line"].startswith("\ufffdbad ")


def test_source_errors_are_quarantined_at_stage_source_and_the_counts_reconcile() -> None:
    values = [json.dumps({"host": "kafka-2.prod-eu", "file": "/l/server.log", "offset": 1, "line": SERVER}).encode(),
              b"not json", json.dumps({"host": "db-1", "file": "/l/server.log", "offset": 2, "line": SERVER}).encode()]
    batch = raw_kafka_batch(values, [None] * 3, ["kafka:logs/0"] * 3, [1, 2, 3], "logs", "default", None,
                            dt.datetime.now(dt.UTC), Envelope.RSYSLOG, rules_from_config(["host"]))
    out = run_engine(pa.Table.from_batches([arrow_to_raw(batch, "logs", 1)]), "logs")
    assert sum(out.counts.get(k, 0) for k in ("state_change", "request", "rejected", "unused")) == len(values)
    assert out.quarantine is not None
    assert sorted((q["stage"], q["reason"]) for q in out.quarantine.to_pylist()) == [
        ("source", "no mapping rule names the cluster of host=db-1 pod=- file=/l/server.log key=-"),
        ("source", "rsyslog envelope: not a JSON object")]
    (row,) = out.silver["state_change_events"].to_pylist()
    assert (row["cluster"], row["broker_id"], row["source"], row["source_offset"]) == (
        "prod-eu", 2, "kafka-2.prod-eu:/l/server.log", 1)


def test_mapping_rules_are_checked_when_read() -> None:
    with pytest.raises(MappingError, match="unknown mapping preset 'nope'"):
        rules_from_config(["nope"])
    with pytest.raises(MappingError, match="bad regex"):
        rules_from_config([{"field": "pod", "pattern": "(?P<broker>"}])
    with pytest.raises(MappingError, match="no \\(\\?P<cluster>"):
        rules_from_config([{"field": "pod", "pattern": "kafka"}])
    with pytest.raises(MappingError, match="unknown origin field 'ip'"):
        rules_from_config([{"field": "ip", "pattern": "(?P<broker>\\d+)"}])
    rules = rules_from_config(["strimzi", {"field": "host", "pattern": "^b(?P<broker>\\d+)$", "cluster": "c"}])
    assert rules_from_config(json.loads(rules_json(rules))) == rules


def test_the_pipeline_settings_name_the_envelope_and_mapping(tmp_path: Any) -> None:
    conf = tmp_path / "p.yaml"
    conf.write_text("sources:\n  kafka:\n    enabled: true\n    logs_topics: [kafka-logs]\n"
                    "    logs_envelope: vector\n    logs_mapping: [strimzi]\n")
    k = load_settings(conf).kafka
    assert (k.logs_envelope, len(k.logs_mapping)) == ("vector", 3)
    conf.write_text("sources:\n  kafka:\n    logs_mapping: [{field: pod, pattern: '(?P<broker>'}]\n")
    with pytest.raises(SettingsError, match=r"sources\.kafka\.logs_mapping: mapping rule on pod: bad regex"):
        load_settings(conf)
