"""The reference broker held against Apache Kafka (``benchmarks.fidelity``).

The unit tests check the report's pure core (:mod:`benchmarks.fidelity_compare`) on inline values. The integration
test runs the report's core once, one broker per cluster (the reference cluster, Apache Kafka 3.9.1 and the 2.8.2
baseline, one after the other, each stopped in a ``finally``), and asserts the agreed invariants:

* every API both implement has the same version range, or its difference is listed in ``DIFFERS_ON_PURPOSE``;
* the bad requests get the same answer: the same error codes, or both close the connection;
* the control requests (LeaderAndIsr / UpdateMetadata / StopReplica on the control-plane listener) get the same
  answer, or the answer Kafka 2.8 gives (the version the reference imitates);
* every state-change.log template the reference writes is a Kafka 3.9 or 2.8 format, or listed;
* the group coordinator's and the metadata probes get Kafka's answers (or Kafka 2.8's), and the reference advertises
  Kafka 2.8's newest version of every API it implements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import fidelity
from benchmarks import fidelity_compare as fc

KAFKA_VERSION, BASELINE_VERSION = "3.9.1", "2.8.2"
#: Probes that are bad requests (their answers must carry the same error codes, or both close the connection).
BAD_REQUESTS = (
    "Produce v3 unknown topic", "Produce v9 unknown topic", "Produce v3 unknown partition",
    "Produce v7 acks=2 (invalid required acks)", "Fetch v4 unknown topic", "Fetch v11 unknown topic",
    "Fetch v12 unknown topic", "Metadata v13 (above both maxima)", "ApiVersions v5 (above both maxima)",
    "unknown API key", "truncated Metadata v1 body", "frame above socket.request.max.bytes", "negative frame size",
    "LeaderAndIsr v2 stale controller epoch", "LeaderAndIsr v7 stale controller epoch",
    "UpdateMetadata v7 stale controller epoch", "StopReplica v3 stale controller epoch",
    "LeaderAndIsr v2 stale broker epoch", "LeaderAndIsr v7 stale broker epoch", "UpdateMetadata v5 stale broker epoch",
    "UpdateMetadata v8 stale broker epoch", "StopReplica v1 stale broker epoch", "StopReplica v4 stale broker epoch",
    "LeaderAndIsr v5 same leader epoch", "StopReplica v3 older leader epoch",
    "DescribeConfigs v4 unknown topic", "IncrementalAlterConfigs v1 bad retention.ms",
    "IncrementalAlterConfigs v1 segment.bytes below minimum", "IncrementalAlterConfigs v1 unknown topic config",
    "IncrementalAlterConfigs v1 unknown topic",
    "JoinGroup v4 new member without a member id", "Heartbeat v3 from a static member's replaced member id",
    "OffsetCommit v8 unknown topic", "OffsetCommit v2 unknown topic", "OffsetFetch v0 unknown topic",
    "DeleteGroups v2 unknown group", "DeleteGroups v2 group with members", "Produce v9 to __consumer_offsets",
    "Metadata v12 illegal topic name", "CreateTopics v7 illegal names", "CreateTopics v7 __consumer_offsets",
)
#: Group and metadata probes whose whole answer (codes, fields, facts) is Kafka's, or Kafka 2.8's (the release the
#: reference advertises).
SAME_ANSWERS = (
    "Metadata v12 all topics lists __consumer_offsets internal", "JoinGroup v3 new member without a member id",
    "JoinGroup v5 static member rejoins a Stable group", "OffsetCommit v8 member commit while the group prepares a "
    "rebalance", "OffsetCommit v8 generation -1 from a non-member while the group has members",
    "OffsetFetch v1 unknown topic", "OffsetFetch v5 unknown topic", "OffsetFetch v8 unknown topic",
    "DeleteGroups v1 group with committed offsets only", "OffsetFetch v5 after DeleteGroups",
)
CONTROL_ANSWERS = (
    "LeaderAndIsr v2 become-leader", "LeaderAndIsr v7 become-leader", "LeaderAndIsr v5 become-leader",
    "UpdateMetadata v5", "UpdateMetadata v7", "UpdateMetadata v8", "StopReplica v4 partition not hosted",
    "StopReplica v3 stop", "StopReplica v1 stop",
)


# ------------------------------------------------------------------------------------------------------ pure core
def test_templates_replace_data_with_placeholders_and_merge_lists() -> None:
    line = ("[2026-01-02 03:04:05,678] TRACE [Controller id=1 epoch=7] Received response LeaderAndIsrResponseData("
            "errorCode=0, partitionErrors=[], topics=[LeaderAndIsrTopicError(topicId=AAAAAAAAAAAAAAAAAAAAAA, "
            "partitionErrors=[LeaderAndIsrPartitionError(topicName='orders', partitionIndex=0, errorCode=0), "
            "LeaderAndIsrPartitionError(topicName='orders', partitionIndex=1, errorCode=0)])]) for request "
            "LEADER_AND_ISR with correlation id 3 sent to broker 127.0.0.1:9093 (id: 2 rack: null) "
            "(state.change.logger)")
    assert fc.line_template(line, ["orders"]) == (
        "TRACE [Controller id=<n> epoch=<n>] Received response LeaderAndIsrResponseData(errorCode=<n>, "
        "partitionErrors=[], topics=[LeaderAndIsrTopicError(topicId=<uuid>, partitionErrors=["
        "LeaderAndIsrPartitionError(topicName='<s>', partitionIndex=<n>, errorCode=<n>)])]) for request "
        "LEADER_AND_ISR with correlation id <n> sent to broker <host>:<n> (id: <n> rack: null) (state.change.logger)")
    isr = ("[2026-01-02 03:04:05,678] INFO [Controller id=1 epoch=7] Partition orders-3 state changed to (Leader:1,"
           "ISR:1,2,LeaderEpoch:4,ZkVersion:5,ControllerEpoch:7) after removing replica 3 from the ISR as part of "
           "transition to OfflineReplica (state.change.logger)")
    assert fc.line_template(isr, ["orders"]) in fc.KAFKA_28_KNOWN_TEMPLATES
    lettered = line.replace("AAAAAAAAAAAAAAAAAAAAAA", "YmFHvNLmTWuhBtgWYrLpCA")  # a random id with no digit
    assert fc.line_template(lettered, ["orders"]) == fc.line_template(line, ["orders"])
    assert fc.line_template("\tat kafka.controller.KafkaController.process(KafkaController.scala:1)") is None


def test_request_log_templates_are_one_union_per_api_version_listener_and_sender() -> None:
    def line(response: str, client: str = "rdkafka") -> str:
        return ('[2026-01-02 03:04:05,678] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
                '{"requestApiKey":3,"requestApiVersion":12,"correlationId":7,"clientId":"' + client + '",'
                '"requestApiKeyName":"METADATA"},"request":{"topics":null},"response":' + response
                + ',"listener":"PLAINTEXT"} (kafka.request.logger)')

    full = line('{"topics":[{"name":"t","partitions":[{"isrNodes":[1,2],"offlineReplicas":[]}]}]}')
    empty = line('{"topics":[{"name":"t","partitions":[]}]}')
    other_sender = line('{"topics":[]}', client="1")
    templates = fc.templates_of([full, empty, other_sender])
    assert len(templates) == 2  # the two client lines merge; the controller's line is its own template
    assert any('"partitions":[{"isrNodes":"<list>","offlineReplicas":"<list>"}]' in t for t in templates)
    assert all('"requestApiKeyName":"METADATA"' in t and '"requestApiVersion":12' in t for t in templates)


def test_compare_classifies_by_the_table_then_by_the_baseline() -> None:
    names = {0: "Produce", 3: "Metadata", 7: "ControlledShutdown", 18: "ApiVersions"}
    rows = {r["api"]: r for r in fc.compare_apis({0: (0, 11), 3: (0, 12), 7: (0, 3), 18: (0, 4)},
                                                 {0: (3, 9), 3: (0, 12), 18: (0, 3)}, names)}
    assert rows["Metadata"]["status"] == "same"
    assert (rows["Produce"]["status"], rows["Produce"]["verdict"]) == ("differs", "on purpose")
    assert rows["ControlledShutdown"]["status"] == "only-kafka"
    kafka = {"a": fc.outcome({"ErrorCode": 0})}
    ref = {"a": fc.outcome({"ErrorCode": 74})}
    assert fc.compare_cases(kafka, ref)[0]["verdict"] == "fix"
    assert fc.compare_cases(kafka, ref, baseline={"a": fc.outcome({"ErrorCode": 74})})[0]["category"] == "version"
    only_ref, only_kafka = "INFO only-ref (state.change.logger)", "INFO only-kafka (state.change.logger)"
    # 2.8 writes both: the reference's line is 2.8's, the one it lacks is a fix
    rows_t = fc.compare_templates("state-change.log", {only_ref}, {only_kafka}, baseline={only_ref, only_kafka})
    assert {r["status"]: r["verdict"] for r in rows_t} == {"only-reference": "on purpose", "only-kafka": "fix"}
    # 2.8 writes neither: the reference's line is unknown (fix), Kafka's is 3.x only
    rows_t = fc.compare_templates("state-change.log", {only_ref}, {only_kafka}, baseline=set())
    assert {r["status"]: r["verdict"] for r in rows_t} == {"only-reference": "fix", "only-kafka": "on purpose"}


def test_outcomes_tell_null_from_empty_and_closed_from_answered() -> None:
    assert fc.outcome(None) == fc.Outcome(closed=True)
    a = fc.outcome({"Responses": [{"ErrorCode": 3, "AbortedTransactions": None}]})
    b = fc.outcome({"Responses": [{"ErrorCode": 3, "AbortedTransactions": []}]})
    assert a.errors == b.errors == ("Responses[].ErrorCode=3",)
    assert a.shape != b.shape


def test_metric_names_drop_the_exporter_counter_suffix() -> None:
    text = ('# TYPE x counter\nkafka_network_acceptor_acceptorblockedpercent_count_total{listener="PLAINTEXT"} 1.0\n'
            "kafka_server_replicamanager_isrshrinks_total 0.0\n")
    names = fc.metric_names(text, exporter_counter_suffix=True)
    assert names == {"kafka_network_acceptor_acceptorblockedpercent_count": frozenset({"listener"}),
                     "kafka_server_replicamanager_isrshrinks_total": frozenset()}


# ------------------------------------------------------------------------------------------------------ the report
@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from planewatch.kafka.artifacts import ArtifactMissing

    try:
        return fidelity.run(Path(tmp_path_factory.mktemp("fidelity")), KAFKA_VERSION, BASELINE_VERSION, brokers=1)
    except ArtifactMissing as exc:
        pytest.skip(str(exc))


def _cases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["case"]: row for row in report["cases"]}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_api_versions_agree_or_differ_on_purpose(report: dict[str, Any]) -> None:
    both = [r for r in report["apis"] if r["status"] in ("same", "differs")]
    assert len(both) >= 20, "the reference advertises the APIs a client needs"
    unexplained = [(r["api"], r["kafka"], r["reference"]) for r in both
                   if r["status"] == "differs" and fc.classify("api", r["api"]) is None]
    assert unexplained == []
    assert not [r for r in report["apis"] if r["status"] == "only-reference"]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_bad_requests_get_kafkas_error_codes(report: dict[str, Any]) -> None:
    cases = _cases(report)
    assert set(BAD_REQUESTS) <= set(cases)
    different = {name: (cases[name]["kafka"], cases[name]["reference"]) for name in BAD_REQUESTS
                 if (cases[name]["kafka"].get("closed"), cases[name]["kafka"].get("errors"))
                 != (cases[name]["reference"].get("closed"), cases[name]["reference"].get("errors"))}
    assert different == {}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_control_requests_get_kafkas_answers(report: dict[str, Any]) -> None:
    cases = _cases(report)
    assert set(CONTROL_ANSWERS) <= set(cases)
    answered = [cases[name] for name in CONTROL_ANSWERS]
    assert all(not row["kafka"].get("closed") for row in answered if "v7" not in row["case"] and "v8" not in
               row["case"]), "Kafka answered every control request it speaks"
    wrong = [(row["case"], row.get("detail")) for row in answered
             if row["status"] != "same" and row.get("category") != "version"]
    assert wrong == []


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_state_change_templates_are_kafka_formats(report: dict[str, Any]) -> None:
    rows = [r for r in report["templates"] if r["log"] == "state-change.log"]
    assert sum(1 for r in rows if r["status"] == "shared") >= 10, "both wrote the same control-plane lines"
    unknown = [r["template"] for r in rows if r["status"] == "only-reference" and r.get("verdict") != "on purpose"]
    assert unknown == []


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_group_and_metadata_answers_are_kafkas(report: dict[str, Any]) -> None:
    cases = _cases(report)
    assert set(SAME_ANSWERS) <= set(cases)
    wrong = [(name, cases[name].get("detail")) for name in SAME_ANSWERS
             if cases[name]["status"] != "same" and cases[name].get("category") != "version"]
    assert wrong == []


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_api_versions_are_the_configured_releases(report: dict[str, Any]) -> None:
    """The reference advertises Kafka 2.8's newest version of every API it implements (its default
    ``inter.broker.protocol.version``; clients infer the broker's release from the maxima), so a client infers the
    Kafka its logs claim. Minima may be higher: message-set versions need down-conversion the log never does."""
    advertised = [r for r in report["apis"] if r["reference"] is not None]
    assert advertised
    assert [(r["api"], r["reference"], r["baseline"]) for r in advertised
            if r["baseline"] is None or r["reference"][1] != r["baseline"][1]] == []
