"""Control-plane requests against hand-assembled bytes (field order as in Kafka 3.8's JSON schemas).

The expected frames are built here with ``struct`` field by field, independently of the schema tables,
so a field in the wrong place or version would show up as a byte mismatch.
"""

from __future__ import annotations

import struct
import uuid

from broker.protocol import decode_request, encode_request
from broker.protocol.headers import encode_request_header


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str) -> bytes:
    return i16(len(v)) + v.encode()


def cs(v: str) -> bytes:  # compact string (length + 1 < 128 here)
    return bytes([len(v) + 1]) + v.encode()


def arr(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)


def carr(items: list[bytes]) -> bytes:
    return bytes([len(items) + 1]) + b"".join(items)


TID = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)
NO_TAGS = b"\x00"


def _lai_body() -> dict[str, object]:
    state = {
        "partition_index": 4,
        "controller_epoch": 7,
        "leader": 2,
        "leader_epoch": 12,
        "isr": [2, 3],
        "partition_epoch": 31,
        "replicas": [1, 2, 3],
        "adding_replicas": [4],
        "removing_replicas": [1],
        "is_new": True,
        "leader_recovery_state": 1,
    }
    return {
        "controller_id": 1,
        "is_kraft_controller": True,
        "controller_epoch": 7,
        "broker_epoch": 25,
        "type": 2,
        "topic_states": [{"topic_name": "orders", "topic_id": TID, "partition_states": [state]}],
        "live_leaders": [{"broker_id": 2, "host_name": "b2", "port": 9094}],
        "max_broker_epoch": 40,
    }


def _check(api_key: int, version: int, body: dict[str, object], expected_body: bytes) -> None:
    wire = encode_request(api_key, version, 44, "1", body)
    head = encode_request_header(api_key, version, 44, "1")
    assert wire[4:] == head + expected_body
    assert decode_request(wire[4:])[1]["controller_id"] == body["controller_id"]


def test_leader_and_isr_v2() -> None:
    p = i32(4) + i32(7) + i32(2) + i32(12) + arr([i32(2), i32(3)]) + i32(31) + arr([i32(1), i32(2), i32(3)]) + i8(1)
    expected = i32(1) + i32(7) + i64(25) + arr([s("orders") + arr([p])]) + arr([i32(2) + s("b2") + i32(9094)])
    _check(4, 2, _lai_body(), expected)


def test_leader_and_isr_v3_adds_adding_and_removing_replicas() -> None:
    p = (
        i32(4) + i32(7) + i32(2) + i32(12) + arr([i32(2), i32(3)]) + i32(31) + arr([i32(1), i32(2), i32(3)])
        + arr([i32(4)]) + arr([i32(1)]) + i8(1)
    )  # fmt: skip
    expected = i32(1) + i32(7) + i64(25) + arr([s("orders") + arr([p])]) + arr([i32(2) + s("b2") + i32(9094)])
    _check(4, 3, _lai_body(), expected)


def test_leader_and_isr_v7_flexible_with_max_broker_epoch_tag() -> None:
    p = (
        i32(4) + i32(7) + i32(2) + i32(12) + carr([i32(2), i32(3)]) + i32(31) + carr([i32(1), i32(2), i32(3)])
        + carr([i32(4)]) + carr([i32(1)]) + i8(1) + i8(1) + NO_TAGS
    )  # fmt: skip
    topic = cs("orders") + TID.bytes + carr([p]) + NO_TAGS
    leader = i32(2) + cs("b2") + i32(9094) + NO_TAGS
    tags = b"\x01" + b"\x64" + b"\x08" + i64(40)
    expected = i32(1) + i8(1) + i32(7) + i64(25) + i8(2) + carr([topic]) + carr([leader]) + tags
    _check(4, 7, _lai_body(), expected)


def _um_body() -> dict[str, object]:
    state = {
        "partition_index": 0,
        "controller_epoch": 7,
        "leader": 1,
        "leader_epoch": 3,
        "isr": [1],
        "zk_version": 5,
        "replicas": [1],
        "offline_replicas": [2],
    }
    return {
        "controller_id": 1,
        "is_kraft_controller": False,
        "type": 1,
        "controller_epoch": 7,
        "broker_epoch": 99,
        "topic_states": [{"topic_name": "t", "topic_id": TID, "partition_states": [state]}],
        "live_brokers": [
            {
                "id": 1,
                "endpoints": [{"port": 9092, "host": "h", "listener": "PLAINTEXT", "security_protocol": 0}],
                "rack": None,
            }
        ],
    }


def test_update_metadata_v5() -> None:
    p = i32(0) + i32(7) + i32(1) + i32(3) + arr([i32(1)]) + i32(5) + arr([i32(1)]) + arr([i32(2)])
    broker = i32(1) + arr([i32(9092) + s("h") + s("PLAINTEXT") + i16(0)]) + i16(-1)
    expected = i32(1) + i32(7) + i64(99) + arr([s("t") + arr([p])]) + arr([broker])
    _check(6, 5, _um_body(), expected)


def test_update_metadata_v8_flexible_type_is_tagged() -> None:
    p = i32(0) + i32(7) + i32(1) + i32(3) + carr([i32(1)]) + i32(5) + carr([i32(1)]) + carr([i32(2)]) + NO_TAGS
    broker = i32(1) + carr([i32(9092) + cs("h") + cs("PLAINTEXT") + i16(0) + NO_TAGS]) + b"\x00" + NO_TAGS
    topic = cs("t") + TID.bytes + carr([p]) + NO_TAGS
    tags = b"\x01" + b"\x00" + b"\x01" + i8(1)  # Type = 1 under tag 0
    expected = i32(1) + i8(0) + i32(7) + i64(99) + carr([topic]) + carr([broker]) + tags
    _check(6, 8, _um_body(), expected)


def test_update_metadata_v0_uses_v0_host_and_port() -> None:
    body = {
        "controller_id": 1,
        "controller_epoch": 2,
        "ungrouped_partition_states": [],
        "live_brokers": [{"id": 3, "v0_host": "h", "v0_port": 9092}],
    }
    expected = i32(1) + i32(2) + arr([]) + arr([i32(3) + s("h") + i32(9092)])
    _check(6, 0, body, expected)


def test_stop_replica_v1_and_v4() -> None:
    v1 = {"controller_id": 1, "controller_epoch": 7, "broker_epoch": 25, "delete_partitions": True,
          "topics": [{"name": "t", "partition_indexes": [0, 1]}]}  # fmt: skip
    _check(5, 1, v1, i32(1) + i32(7) + i64(25) + i8(1) + arr([s("t") + arr([i32(0), i32(1)])]))
    v4 = {
        "controller_id": 1,
        "is_kraft_controller": True,
        "controller_epoch": 7,
        "broker_epoch": 25,
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [{"partition_index": 0, "leader_epoch": 3, "delete_partition": True}],
            }
        ],
    }
    pstate = i32(0) + i32(3) + i8(1) + NO_TAGS
    expected = i32(1) + i8(1) + i32(7) + i64(25) + carr([cs("t") + carr([pstate]) + NO_TAGS]) + NO_TAGS
    _check(5, 4, v4, expected)
