"""Framing, headers and the public codec entry points of broker.protocol (pure unit tests, no sockets)."""

from __future__ import annotations

import struct

import pytest

from broker.protocol import (
    SUPPORTED,
    ApiKey,
    CorruptRequest,
    ErrorCode,
    FrameDecoder,
    FrameTooLarge,
    RequestHeader,
    UnknownApi,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_response,
    is_flexible,
    parse_request_header,
)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# ------------------------------------------------------------------------------------------------ framing


def test_frames_split_byte_by_byte() -> None:
    wire = _frame(b"hello") + _frame(b"") + _frame(b"world!")
    dec = FrameDecoder(100)
    out: list[bytes] = []
    for i in range(len(wire)):
        out += dec.feed(wire[i : i + 1])
    assert out == [b"hello", b"", b"world!"]
    assert dec.buffered == 0


def test_several_frames_in_one_feed_and_a_partial_tail() -> None:
    dec = FrameDecoder(100)
    wire = _frame(b"a") + _frame(b"bb") + _frame(b"ccc")
    assert dec.feed(wire + b"\x00\x00") == [b"a", b"bb", b"ccc"]
    assert dec.buffered == 2
    assert dec.feed(b"\x00\x01z") == [b"z"]
    assert dec.buffered == 0


def test_oversized_prefix_is_refused_as_soon_as_read() -> None:
    dec = FrameDecoder(10)
    with pytest.raises(FrameTooLarge) as exc:
        dec.feed(struct.pack(">i", 11))
    assert exc.value.size == 11
    assert "larger than 10" in str(exc.value)


def test_negative_prefix_is_refused() -> None:
    with pytest.raises(FrameTooLarge, match="size = -1"):
        FrameDecoder(10).feed(b"\xff\xff\xff\xff")


def test_frame_of_exactly_max_size_is_accepted() -> None:
    assert FrameDecoder(3).feed(_frame(b"abc")) == [b"abc"]


# ------------------------------------------------------------------------------------------------ headers


def test_request_header_v1_and_v2_client_id_is_int16_even_when_flexible() -> None:
    wire = encode_request(ApiKey.METADATA, 9, 42, "cli", {"topics": None})
    frame = wire[4:]
    assert frame[8:10] == b"\x00\x03"  # int16 length, not compact
    assert frame[13:14] == b"\x00"  # header v2 tagged-field count
    assert parse_request_header(frame) == RequestHeader(3, 9, 42, "cli")


def test_null_client_id() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 5, None, {"topics": None})[4:]
    assert frame[8:10] == b"\xff\xff"
    assert parse_request_header(frame).client_id is None


def test_controlled_shutdown_v0_uses_header_v0() -> None:
    frame = encode_request(ApiKey.CONTROLLED_SHUTDOWN, 0, 9, "ignored", {"broker_id": 3})[4:]
    assert frame == struct.pack(">hhii", 7, 0, 9, 3)
    header, body = decode_request(frame)
    assert header == RequestHeader(7, 0, 9, None)
    assert body == {"broker_id": 3}


def test_header_str_is_kafkas() -> None:
    h = RequestHeader(4, 2, 44, "1")
    assert str(h) == "RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=2, clientId=1, correlationId=44)"


@pytest.mark.parametrize(
    "frame",
    [b"", b"\x00\x03", b"\x00\x03\x00\x01\x00\x00\x00", b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x09ab"],
)
def test_truncated_header_is_corrupt(frame: bytes) -> None:
    with pytest.raises(CorruptRequest):
        parse_request_header(frame)


def test_bad_utf8_client_id_is_corrupt() -> None:
    with pytest.raises(CorruptRequest):
        parse_request_header(struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe")


# ------------------------------------------------------------------------------------------------ dispatch


def test_unknown_api_and_unsupported_version_carry_the_header() -> None:
    with pytest.raises(UnknownApi) as e1:
        decode_request(struct.pack(">hhih", 999, 0, 3, -1))
    assert e1.value.header.correlation_id == 3
    with pytest.raises(UnsupportedVersion) as e2:
        decode_request(struct.pack(">hhih", 3, 99, 4, -1) + b"\x00")
    assert e2.value.header.api_version == 99
    assert e2.value.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_trailing_garbage_after_body_is_corrupt() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 1, "c", {"topics": None})[4:]
    with pytest.raises(CorruptRequest):
        decode_request(frame + b"\x00")


def test_is_flexible() -> None:
    assert is_flexible(ApiKey.LEADER_AND_ISR, 4)
    assert not is_flexible(ApiKey.LEADER_AND_ISR, 3)
    assert is_flexible(ApiKey.UPDATE_METADATA, 6)
    assert not is_flexible(ApiKey.UPDATE_METADATA, 5)
    assert is_flexible(ApiKey.STOP_REPLICA, 2)
    assert not is_flexible(ApiKey.STOP_REPLICA, 1)
    assert is_flexible(ApiKey.API_VERSIONS, 3)
    assert not is_flexible(999, 0)


def test_supported_ranges_cover_the_required_versions() -> None:
    for key, (lo, hi) in {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.METADATA: (0, 12),
        ApiKey.LEADER_AND_ISR: (0, 7),
        ApiKey.UPDATE_METADATA: (0, 8),
        ApiKey.STOP_REPLICA: (0, 4),
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 12),
        ApiKey.LIST_OFFSETS: (1, 7),
    }.items():
        assert SUPPORTED[key][0] <= lo
        assert SUPPORTED[key][1] >= hi


# ------------------------------------------------------------------------------------------------ responses


def test_api_versions_response_header_is_always_v0() -> None:
    h = RequestHeader(ApiKey.API_VERSIONS, 3, 77, "c")
    wire = encode_response(h, {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]})
    assert wire[4:8] == struct.pack(">i", 77)
    assert wire[8:10] == b"\x00\x00"  # error code right after the correlation id: no header tag section
    corr, body = decode_response(ApiKey.API_VERSIONS, 3, wire[4:])
    assert corr == 77
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 3}]


def test_flexible_response_has_header_v1() -> None:
    h = RequestHeader(ApiKey.METADATA, 9, 5, "c")
    wire = encode_response(h, {})
    assert wire[4:9] == struct.pack(">i", 5) + b"\x00"
    assert struct.unpack(">i", wire[:4])[0] == len(wire) - 4


def test_api_versions_unsupported_version_falls_back_to_v0_kip511() -> None:
    wire = error_response(RequestHeader(ApiKey.API_VERSIONS, 9, 12, "c"), ErrorCode.UNSUPPORTED_VERSION)
    assert wire is not None
    corr, body = decode_response(ApiKey.API_VERSIONS, 0, wire[4:])
    assert corr == 12
    assert body == {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": SUPPORTED[18][1]}],
    }


def test_error_response_unknown_api_is_none() -> None:
    assert error_response(RequestHeader(999, 0, 1, None), ErrorCode.INVALID_REQUEST) is None


# ------------------------------------------------------------------------------------------------ error bodies


def _lai_body(version: int) -> dict[str, object]:
    import uuid

    state = {"partition_index": 4, "leader": 2, "isr": [2], "replicas": [2], "topic_name": "orders"}
    if version < 2:
        return {"controller_id": 1, "ungrouped_partition_states": [state, {**state, "partition_index": 5}]}
    return {
        "controller_id": 1,
        "topic_states": [
            {
                "topic_name": "orders",
                "topic_id": uuid.UUID(int=9),
                "partition_states": [state, {**state, "partition_index": 5}],
            }
        ],
    }


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_error_response_lists_every_partition(version: int) -> None:
    import uuid

    header = RequestHeader(ApiKey.LEADER_AND_ISR, version, 3, "1")
    wire = encode_request(4, version, 3, "1", _lai_body(version))
    _, request = decode_request(wire[4:])
    answer = error_response(header, ErrorCode.STALE_CONTROLLER_EPOCH, request)
    assert answer is not None
    _, body = decode_response(4, version, answer[4:])
    assert body["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    if version >= 5:
        assert body["topics"] == [
            {
                "topic_id": uuid.UUID(int=9),
                "partition_errors": [
                    {"partition_index": 4, "error_code": 11},
                    {"partition_index": 5, "error_code": 11},
                ],
            }
        ]
    else:
        assert body["partition_errors"] == [
            {"topic_name": "orders", "partition_index": 4, "error_code": 11},
            {"topic_name": "orders", "partition_index": 5, "error_code": 11},
        ]


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_error_response_lists_every_partition(version: int) -> None:
    if version == 0:
        req = {"ungrouped_partitions": [{"topic_name": "t", "partition_index": 1}]}
    elif version <= 2:
        req = {"topics": [{"name": "t", "partition_indexes": [1]}]}
    else:
        req = {"topic_states": [{"topic_name": "t", "partition_states": [{"partition_index": 1}]}]}
    _, request = decode_request(encode_request(5, version, 1, "c", req)[4:])
    answer = error_response(RequestHeader(5, version, 1, "c"), ErrorCode.STALE_BROKER_EPOCH, request)
    assert answer is not None
    _, body = decode_response(5, version, answer[4:])
    assert body == {
        "error_code": 77,
        "partition_errors": [{"topic_name": "t", "partition_index": 1, "error_code": 77}],
    }


def test_metadata_and_produce_error_responses_mirror_the_request() -> None:
    _, md_req = decode_request(encode_request(3, 9, 1, "c", {"topics": [{"name": "a"}, {"name": "b"}]})[4:])
    answer = error_response(RequestHeader(3, 9, 1, "c"), ErrorCode.INVALID_REQUEST, md_req)
    assert answer is not None
    _, md = decode_response(3, 9, answer[4:])
    assert [(t["name"], t["error_code"]) for t in md["topics"]] == [("a", 42), ("b", 42)]

    produce = {"acks": -1, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b""}]}]}
    _, p_req = decode_request(encode_request(0, 7, 1, "c", produce)[4:])
    answer = error_response(RequestHeader(0, 7, 1, "c"), ErrorCode.NOT_LEADER_OR_FOLLOWER, p_req)
    assert answer is not None
    _, p = decode_response(0, 7, answer[4:])
    (resp,) = p["responses"]
    assert resp["name"] == "t"
    assert resp["partition_responses"][0]["error_code"] == 6
    assert resp["partition_responses"][0]["base_offset"] == -1


def test_error_response_without_request_body_has_top_level_code() -> None:
    for key, version in ((ApiKey.UPDATE_METADATA, 7), (ApiKey.LEADER_AND_ISR, 4), (ApiKey.CONTROLLED_SHUTDOWN, 3)):
        answer = error_response(RequestHeader(key, version, 1, "c"), ErrorCode.NOT_CONTROLLER)
        assert answer is not None
        assert decode_response(key, version, answer[4:])[1]["error_code"] == ErrorCode.NOT_CONTROLLER


# ------------------------------------------------------------------------------------------------ KIP-673 JSON


def test_request_and_response_json_follow_kafkas_converters() -> None:
    from broker.protocol import request_header_to_json, request_to_json, response_to_json

    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": "test_topic",
                "partitions": [{"partition_index": 0, "timestamp": 1599676632886, "current_leader_epoch": 0}],
            }
        ],
    }
    header = RequestHeader(ApiKey.LIST_OFFSETS, 5, 8799, "consumer-group-1")
    _, decoded = decode_request(encode_request(2, 5, 8799, "consumer-group-1", body)[4:])
    js = request_to_json(header, decoded)
    assert js == {
        "replicaId": -1,
        "isolationLevel": 0,
        "topics": [
            {
                "name": "test_topic",
                "partitions": [{"partitionIndex": 0, "currentLeaderEpoch": 0, "timestamp": 1599676632886}],
            }
        ],
    }
    # schema order, as the generated JsonConverter writes it
    assert list(js["topics"][0]["partitions"][0]) == ["partitionIndex", "currentLeaderEpoch", "timestamp"]
    assert request_header_to_json(header) == {
        "requestApiKey": 2,
        "requestApiVersion": 5,
        "correlationId": 8799,
        "clientId": "consumer-group-1",
        "requestApiKeyName": "LIST_OFFSETS",
    }
    v0 = request_header_to_json(RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 1, None))
    assert v0 == {
        "requestApiKey": 7,
        "requestApiVersion": 0,
        "correlationId": 1,
        "requestApiKeyName": "CONTROLLED_SHUTDOWN",
    }
    resp = response_to_json(0, 8, {"responses": [{"name": "t", "partition_responses": [{"index": 0, "records": b""}]}]})
    assert "throttleTimeMs" in resp
    fetch = response_to_json(1, 12, {"responses": [{"topic": "t", "partitions": [{"records": b"12345"}]}]})
    part = fetch["responses"][0]["partitions"][0]
    assert part["recordsSizeInBytes"] == 5
    assert "records" not in part


def test_json_uuid_is_kafkas_base64_and_tagged_fields_only_when_set() -> None:
    import uuid

    from broker.protocol import request_to_json, uuid_to_kafka_string

    tid = uuid.UUID("1d2c3f01-bcc5-4a57-8f9c-614b44737c3d")
    assert uuid_to_kafka_string(tid) == "HSw_AbzFSlePnGFLRHN8PQ"
    header = RequestHeader(4, 5, 1, "1")
    with_tag = request_to_json(header, {"topic_states": [{"topic_id": tid}], "max_broker_epoch": 5})
    assert with_tag["topicStates"][0]["topicId"] == "HSw_AbzFSlePnGFLRHN8PQ"
    assert with_tag["maxBrokerEpoch"] == 5
    assert "maxBrokerEpoch" not in request_to_json(header, {})


@pytest.mark.parametrize("key", sorted(SUPPORTED))
def test_error_response_encodes_for_every_api_and_version_with_a_sample_request(key: int) -> None:
    from broker.protocol import REGISTRY

    from .test_protocol_messages import sample

    lo, hi = SUPPORTED[key]
    for version in range(lo, hi + 1):
        msg = REGISTRY[key][0]
        _, request = decode_request(
            encode_request(key, version, 1, "c", sample(msg.fields, version, version in msg.flexible))[4:]
        )
        for body in (request, None):
            answer = error_response(RequestHeader(key, version, 1, "c"), ErrorCode.NOT_COORDINATOR, body)
            assert answer is not None
            corr, decoded = decode_response(key, version, answer[4:])
            assert corr == 1
            if "error_code" in decoded:
                assert decoded["error_code"] == ErrorCode.NOT_COORDINATOR
