"""One request's work is bounded: repeated names are decoded once, handled once, and logged within a budget.

Pure tests of the codec and the request-log view, then every API that carries name arrays against a real in-process
broker: a name repeated in a request is answered as Kafka answers it (collapsed, or INVALID_REQUEST where Kafka
answers every occurrence with it).
"""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.apis.distinct import last_by_key, repeated
from broker.protocol import ApiKey, RequestHeader, decode_request, encode_request, request_to_json, response_to_json
from broker.protocol.codec import SHARED_ELEMENTS_FROM
from broker.protocol.error_codes import ErrorCode
from broker.protocol.json_view import MAX_LOGGED_BYTES, MAX_LOGGED_ELEMENTS

from .data_plane_helpers import Wire, broker

METADATA_V = 9
_MD_FLAGS = {"allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
             "include_topic_authorized_operations": False}


def _metadata_request(names: list[str], version: int = METADATA_V) -> bytes:
    body = {"topics": [{"name": n} for n in names], **_MD_FLAGS}
    return encode_request(ApiKey.METADATA, version, 1, "bounds", body)[4:]


def _elements(node: Any) -> int:
    """Array elements at any depth of a JSON view."""
    if isinstance(node, dict):
        return sum(_elements(v) for v in node.values())
    if isinstance(node, list):
        return len(node) + sum(_elements(v) for v in node)
    return 0


# ------------------------------------------------------------------------------------------------ pure helpers
def test_last_by_key_keeps_first_positions_and_last_values_and_repeated_finds_duplicates() -> None:
    items = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)]
    assert list(last_by_key(items, lambda i: i[0]).values()) == [("a", 3), ("b", 5), ("c", 4)]
    assert repeated(k for k, _ in items) == {"a", "b"}
    assert repeated(["x", "y"]) == set()


def test_identical_array_elements_decode_to_one_shared_object_and_equal_values() -> None:
    distinct = [f"t{i}" for i in range(SHARED_ELEMENTS_FROM)]
    names = ["a", "b", "a", "c"] * SHARED_ELEMENTS_FROM + distinct
    _, body = decode_request(_metadata_request(names))
    topics = body["topics"]
    assert [t["name"] for t in topics] == names
    assert len({id(t) for t in topics}) == 3 + len(distinct)  # one object per distinct encoding
    # short arrays keep the plain loop: equal values, separate objects
    _, small = decode_request(_metadata_request(["a", "a"]))
    assert small["topics"][0] == small["topics"][1]
    assert small["topics"][0] is not small["topics"][1]


def test_decoding_a_name_repeated_300_000_times_costs_list_slots_not_objects() -> None:
    frame = _metadata_request(["orders"] * 300_000)
    tracemalloc.start()
    try:
        _, body = decode_request(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(body["topics"]) == 300_000
    # 2.4 MB of list slots (and their over-allocation); one dict per element was ~70 MB
    assert peak < 8_000_000, peak


def test_request_log_view_holds_a_bounded_number_of_elements_and_says_how_many_it_left_out() -> None:
    header = RequestHeader(ApiKey.METADATA, METADATA_V, 1, "bounds")
    _, body = decode_request(_metadata_request(["orders"] * 200_000))
    view = request_to_json(header, body)
    assert len(view["topics"]) == MAX_LOGGED_ELEMENTS
    assert view["topicsOmitted"] == 200_000 - MAX_LOGGED_ELEMENTS
    assert view["allowAutoTopicCreation"] is False
    # the budget is shared by nested arrays: 3 topics x 600 partitions
    big = {"topics": [{"name": f"t{i}", "partitions": [{"partition_index": p, "error_code": 0, "leader_id": 1,
                                                        "leader_epoch": 0, "replica_nodes": [1], "isr_nodes": [1],
                                                        "offline_replicas": []} for p in range(600)]}
                      for i in range(3)], "brokers": []}
    resp = response_to_json(ApiKey.METADATA, METADATA_V, big)
    assert _elements(resp) <= MAX_LOGGED_ELEMENTS
    assert len(resp["topics"]) + resp["topicsOmitted"] == 3
    first = resp["topics"][0]
    assert len(first["partitions"]) + first["partitionsOmitted"] == 600
    assert first["partitions"][0] == {"errorCode": 0, "partitionIndex": 0, "leaderId": 1, "leaderEpoch": 0,
                                      "replicaNodes": [1], "isrNodes": [1], "offlineReplicas": []}
    # a small request is logged whole, as Kafka's converter writes it
    _, small = decode_request(_metadata_request(["a", "b"]))
    assert request_to_json(header, small)["topics"] == [{"name": "a"}, {"name": "b"}]
    # bytes: base64 up to the cap, the size above it
    sync = {"group_id": "g", "generation_id": 1, "member_id": "m", "assignments": [
        {"member_id": "m", "assignment": b"x" * MAX_LOGGED_BYTES}, {"member_id": "n", "assignment": b"y" * 5000}]}
    logged = request_to_json(RequestHeader(ApiKey.SYNC_GROUP, 3, 1, "bounds"), sync)["assignments"]
    assert len(logged[0]["assignment"]) > MAX_LOGGED_BYTES
    assert "assignmentSizeInBytes" not in logged[0]
    assert logged[1] == {"memberId": "n", "assignmentSizeInBytes": 5000}


# ------------------------------------------------------------------------------------------------ per API, on a broker
def _topics(w: Wire, *specs: tuple[str, int]) -> None:
    body = {"topics": [{"name": n, "num_partitions": p, "replication_factor": 1} for n, p in specs],
            "timeout_ms": 5000}
    resp = w.call(ApiKey.CREATE_TOPICS, 5, body)
    assert [t["error_code"] for t in resp["topics"]] == [0] * len(specs)


@pytest.fixture
def wire(tmp_path: Path) -> Any:
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        try:
            yield w
        finally:
            w.close()


def test_metadata_answers_each_topic_once_however_often_it_is_named(wire: Wire) -> None:
    _topics(wire, ("orders", 3))
    resp = wire.call(ApiKey.METADATA, METADATA_V, {"topics": [{"name": n} for n in ["orders", "nope", "orders"] * 500],
                                                   **_MD_FLAGS})
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in resp["topics"]] == [
        ("orders", ErrorCode.NONE, 3), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
    # v12 by topic id: a known id and an unknown one, each named many times
    known = wire.call(ApiKey.METADATA, 12, {"topics": [{"name": "orders"}], **_MD_FLAGS})["topics"]
    tid, stranger = known[0]["topic_id"], uuid.uuid4()
    by_id = wire.call(ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": tid}, {"name": None,
                                                                                         "topic_id": stranger}] * 50,
                                            **_MD_FLAGS})
    assert [(t["name"], t["error_code"]) for t in by_id["topics"]] == [
        (None, ErrorCode.UNKNOWN_TOPIC_ID), ("orders", ErrorCode.NONE)]
    # auto-creation (on by default) creates a repeated unknown name once
    auto = wire.call(ApiKey.METADATA, METADATA_V, {"topics": [{"name": "auto"}] * 300,
                                                   "allow_auto_topic_creation": True})
    assert [(t["name"], t["error_code"]) for t in auto["topics"]] == [("auto", ErrorCode.NONE)]


def test_create_and_delete_topics_take_each_name_once(wire: Wire) -> None:
    body = {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1} for n in ["twice", "once", "twice"]],
            "timeout_ms": 5000}
    resp = wire.call(ApiKey.CREATE_TOPICS, 5, body)["topics"]
    assert [(t["name"], t["error_code"], t["error_message"]) for t in resp] == [
        ("twice", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."), ("once", ErrorCode.NONE, None)]
    gone = wire.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["once", "once", "once"], "timeout_ms": 5000})
    assert [(r["name"], r["error_code"]) for r in gone["responses"]] == [("once", ErrorCode.NONE)]
    _topics(wire, ("grow", 1))
    grown = wire.call(ApiKey.CREATE_PARTITIONS, 2, {"topics": [{"name": "grow", "count": 2, "assignments": None}] * 3,
                                                   "timeout_ms": 5000, "validate_only": False})
    assert [(r["name"], r["error_code"]) for r in grown["results"]] == [("grow", ErrorCode.INVALID_REQUEST)]


def test_fetch_list_offsets_and_delete_records_handle_a_repeated_partition_as_kafka_does(wire: Wire) -> None:
    _topics(wire, ("orders", 2))
    parts = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}] * 100
    fetched = wire.call(ApiKey.FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 65536,
                                           "topics": [{"topic": "orders", "partitions": [*parts, {
                                               "partition": 1, "fetch_offset": 0, "partition_max_bytes": 1024}]}]})
    assert [(r["topic"], [p["partition_index"] for p in r["partitions"]]) for r in fetched["responses"]] == [
        ("orders", [0, 1])]
    listed = wire.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "timestamp": -1}, {"partition_index": 1, "timestamp": -1},
        {"partition_index": 0, "timestamp": -2}]}]})
    assert [(p["partition_index"], p["error_code"]) for p in listed["topics"][0]["partitions"]] == [
        (0, ErrorCode.INVALID_REQUEST), (1, ErrorCode.NONE), (0, ErrorCode.INVALID_REQUEST)]
    deleted = wire.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "offset": -1}] * 50}], "timeout_ms": 5000})
    assert [[p["partition_index"] for p in t["partitions"]] for t in deleted["topics"]] == [[0]]


def test_group_and_config_apis_answer_each_repeated_name_once(wire: Wire) -> None:
    _topics(wire, ("orders", 2))
    wire.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
    commit = wire.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": "g", "generation_id_or_member_epoch": -1,
                                                 "member_id": "", "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": o} for o in (1, 2, 3)]},
        {"name": "orders", "partitions": [{"partition_index": 1, "committed_offset": 7}]}]})
    assert [(t["name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
            for t in commit["topics"]] == [("orders", [(0, ErrorCode.NONE), (1, ErrorCode.NONE)])]
    fetched = wire.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": [
        {"name": "orders", "partition_indexes": [0, 0, 1]}, {"name": "orders", "partition_indexes": [0]}]})
    assert [(t["name"], [(p["partition_index"], p["committed_offset"]) for p in t["partitions"]])
            for t in fetched["topics"]] == [("orders", [(0, 3), (1, 7)])]  # the last value of a repeated partition
    groups = wire.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g", "g", "h", "g"]})["groups"]
    assert [g["group_id"] for g in groups] == ["g", "h"]
    configs = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None}] * 20})["results"]
    assert len(configs) == 1
    assert len(configs[0]["configs"]) > 10
    deleted = wire.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g", "g", "g"]})["results"]
    assert [(r["group_id"], r["error_code"]) for r in deleted] == [("g", ErrorCode.NONE)]
