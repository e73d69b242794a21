"""Round trips of every supported API and version through the schema codec, plus tagged fields and nulls."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from broker.protocol import (
    REGISTRY,
    SUPPORTED,
    ApiKey,
    CorruptRequest,
    EncodeError,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_to_json,
    response_to_json,
)
from broker.protocol.codec import message_codec
from broker.protocol.headers import encode_request_header
from broker.protocol.schema import Field, Message

# --------------------------------------------------------------------------------------------- sample bodies

_INT_LIMITS = {
    "int8": 100,
    "int16": 30000,
    "uint16": 60000,
    "int32": 2_000_000_000,
    "int64": 2**62,
    "uint32": 4_000_000_000,
}


def _leaf(type_: str, n: int) -> Any:
    if type_ in _INT_LIMITS:
        return (n * 7 + 1) % _INT_LIMITS[type_]
    if type_ == "float64":
        return n + 0.5
    if type_ == "bool":
        return True
    if type_ == "string":
        return f"s{n}-ü"
    if type_ in ("bytes", "records"):
        return bytes([n % 256, 1, 2, 3])
    if type_ == "uuid":
        return uuid.UUID(int=n + 1)
    raise AssertionError(type_)


def sample(
    fields: tuple[Field, ...], version: int, flex: bool, counter: itertools.count[int] | None = None
) -> dict[str, Any]:
    """A body with a non-default value in every field present in ``version`` (tagged ones included)."""
    counter = counter or itertools.count(1)
    out: dict[str, Any] = {}
    for fld in fields:
        if version not in fld.versions:
            continue
        if fld.tag is not None and version in fld.tagged and not flex:
            continue
        if fld.is_array:
            if fld.is_struct:
                out[fld.key] = [sample(fld.fields, version, flex, counter) for _ in range(2)]
            else:
                out[fld.key] = [_leaf(fld.element_type, next(counter)) for _ in range(3)]
        elif fld.is_struct:
            out[fld.key] = sample(fld.fields, version, flex, counter)
        else:
            out[fld.key] = _leaf(fld.type, next(counter))
    return out


def _cases() -> list[tuple[int, int]]:
    return [(key, v) for key, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]


def _id(case: tuple[int, int]) -> str:
    return f"{ApiKey(case[0]).name}-v{case[1]}"


# --------------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_request_round_trip(case: tuple[int, int]) -> None:
    key, version = case
    msg = REGISTRY[key][0]
    body = sample(msg.fields, version, version in msg.flexible)
    wire = encode_request(key, version, 1234, "rt-client", body)
    header, decoded = decode_request(wire[4:])
    assert header == RequestHeader(key, version, 1234, None if key == 7 and version == 0 else "rt-client")
    assert decoded == body
    # re-encoding the decoded body gives the same bytes
    assert encode_request(key, version, 1234, "rt-client", decoded) == wire
    # the JSON view has one camelCase key per top-level field present in the version
    assert set(request_to_json(header, decoded)) == {_json_key(f) for f in msg.fields if f.key in decoded}


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_response_round_trip(case: tuple[int, int]) -> None:
    key, version = case
    msg = REGISTRY[key][1]
    body = sample(msg.fields, version, version in msg.flexible)
    wire = encode_response(RequestHeader(key, version, 99, "c"), body)
    corr, decoded = decode_response(key, version, wire[4:])
    assert corr == 99
    assert decoded == body
    assert set(response_to_json(key, version, decoded)) == {_json_key(f) for f in msg.fields if f.key in decoded}


def _json_key(f: Field) -> str:
    return f.json_key + ("SizeInBytes" if f.type == "records" else "")


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_empty_request_body_takes_schema_defaults(case: tuple[int, int]) -> None:
    key, version = case
    msg = REGISTRY[key][0]
    _, decoded = decode_request(encode_request(key, version, 1, None, {})[4:])
    for fld in msg.fields:
        if version in fld.versions and not (fld.tag is not None and version not in msg.flexible):
            assert decoded[fld.key] == fld.default, fld.name


def test_omitted_records_are_an_empty_record_set_not_null() -> None:
    # librdkafka fails a Fetch response whose MessageSetSize is negative
    wire = encode_response(RequestHeader(1, 11, 1, "c"), {"responses": [{"topic": "t", "partitions": [{}]}]})
    assert wire.endswith(b"\x00\x00\x00\x00")  # records: int32 size 0 (last field of the partition)
    _, body = decode_response(1, 11, wire[4:])
    assert body["responses"][0]["partitions"][0]["records"] == b""


# --------------------------------------------------------------------------------------------- truncation


def _truncation_cases() -> list[tuple[int, int]]:
    picks = {
        ApiKey.METADATA: (1, 9, 12),
        ApiKey.LEADER_AND_ISR: (1, 2, 4, 5, 7),
        ApiKey.UPDATE_METADATA: (0, 5, 6, 8),
        ApiKey.STOP_REPLICA: (0, 1, 2, 3, 4),
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 12),
        ApiKey.API_VERSIONS: (3,),
    }
    return [(k, v) for k, vs in picks.items() for v in vs]


@pytest.mark.parametrize("case", _truncation_cases(), ids=_id)
def test_every_truncation_is_corrupt_request(case: tuple[int, int]) -> None:
    key, version = case
    msg = REGISTRY[key][0]
    body = sample(msg.fields, version, version in msg.flexible)
    frame = encode_request(key, version, 5, "c", body)[4:]
    for cut in range(len(frame) - 1, 7, -1):
        with pytest.raises(CorruptRequest):
            decode_request(frame[:cut])


@pytest.mark.parametrize("seed", range(40))
def test_random_garbage_bodies_never_escape_as_other_errors(seed: int) -> None:
    import random

    rnd = random.Random(seed)
    key, (lo, hi) = rnd.choice(sorted(SUPPORTED.items()))
    version = rnd.randint(lo, hi)
    head = encode_request_header(key, version, 1, "g")
    garbage = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 64)))
    try:
        decode_request(head + garbage)
    except CorruptRequest:
        pass


def test_huge_array_count_is_rejected_without_allocating() -> None:
    # LeaderAndIsr v2: controller_id, controller_epoch, broker_epoch, then topic_states count = 2**31-1
    frame = encode_request_header(4, 2, 1, "c") + bytes.fromhex("00000001 00000002 0000000000000003 7fffffff")
    with pytest.raises(CorruptRequest, match="runs past the end"):
        decode_request(frame)


# --------------------------------------------------------------------------------------------- tagged fields


def test_max_broker_epoch_is_tagged_field_100_only_in_flexible_versions() -> None:
    body = {"controller_id": 1, "controller_epoch": 2, "broker_epoch": 3, "max_broker_epoch": 77}
    flex = encode_request(ApiKey.LEADER_AND_ISR, 4, 1, "c", body)
    # ... topic_states (empty compact array = 0x01), live_leaders (0x01), tag section: 1 field, tag 100, 8 bytes
    assert flex.endswith(b"\x01\x01\x01\x64\x08" + (77).to_bytes(8, "big"))
    _, decoded = decode_request(flex[4:])
    assert decoded["max_broker_epoch"] == 77
    # default -1 is not written
    plain = encode_request(ApiKey.LEADER_AND_ISR, 4, 1, "c", {**body, "max_broker_epoch": -1})
    assert plain.endswith(b"\x01\x01\x00")
    assert decode_request(plain[4:])[1]["max_broker_epoch"] == -1
    # non-flexible: no such field
    _, v3 = decode_request(encode_request(ApiKey.LEADER_AND_ISR, 3, 1, "c", body)[4:])
    assert "max_broker_epoch" not in v3
    for key, version in ((ApiKey.UPDATE_METADATA, 6), (ApiKey.STOP_REPLICA, 2)):
        _, d = decode_request(encode_request(key, version, 1, "c", body)[4:])
        assert d["max_broker_epoch"] == 77
    for key, version in ((ApiKey.UPDATE_METADATA, 5), (ApiKey.STOP_REPLICA, 1)):
        _, d = decode_request(encode_request(key, version, 1, "c", body)[4:])
        assert "max_broker_epoch" not in d


def test_unknown_tagged_fields_are_preserved() -> None:
    body = {"controller_id": 1, "_tagged_fields": {5: b"abc", 200: b""}}
    wire = encode_request(ApiKey.UPDATE_METADATA, 7, 1, "c", body)
    _, decoded = decode_request(wire[4:])
    assert decoded["_tagged_fields"] == {5: b"abc", 200: b""}
    assert encode_request(ApiKey.UPDATE_METADATA, 7, 1, "c", decoded) == wire


def test_update_metadata_v8_type_is_tagged_field_0() -> None:
    wire = encode_request(ApiKey.UPDATE_METADATA, 8, 1, "c", {"type": 2})
    assert wire.endswith(b"\x01\x00\x01\x02")  # live_brokers empty, 1 tagged field, tag 0, size 1 ... value
    _, decoded = decode_request(wire[4:] + b"")
    assert decoded["type"] == 2


def test_tagged_field_with_wrong_size_is_corrupt() -> None:
    wire = bytearray(encode_request(ApiKey.LEADER_AND_ISR, 4, 1, "c", {"max_broker_epoch": 5})[4:])
    assert wire[-9] == 8
    wire[-9] = 9
    with pytest.raises(CorruptRequest):
        decode_request(bytes(wire) + b"\x00")


# --------------------------------------------------------------------------------------------- nulls and errors


def test_nullable_fields_round_trip_null() -> None:
    wire = encode_request(ApiKey.METADATA, 12, 1, "c", {"topics": None})
    assert decode_request(wire[4:])[1]["topics"] is None
    resp = encode_response(RequestHeader(3, 12, 1, "c"), {"cluster_id": None, "brokers": [{"rack": None}]})
    _, body = decode_response(3, 12, resp[4:])
    assert body["cluster_id"] is None
    assert body["brokers"][0]["rack"] is None


def test_null_in_non_nullable_field_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        encode_request(ApiKey.METADATA, 0, 1, "c", {"topics": None})
    with pytest.raises(EncodeError):
        encode_request(ApiKey.LEADER_AND_ISR, 2, 1, "c", {"controller_id": None})
    with pytest.raises(EncodeError):
        encode_request(ApiKey.LEADER_AND_ISR, 2, 1, "c", {"controller_id": 2**40})


def test_null_where_not_nullable_on_the_wire_is_corrupt() -> None:
    # Metadata v0 topics = -1 (null is only allowed from v1)
    with pytest.raises(CorruptRequest, match="non-nullable"):
        decode_request(encode_request_header(3, 0, 1, "c") + b"\xff\xff\xff\xff")


def test_every_message_compiles_for_every_valid_version() -> None:
    for req, resp in REGISTRY.values():
        for m in (req, resp):
            assert isinstance(m, Message)
            for v in range(m.valid.lo, m.valid.hi + 1):
                message_codec(m, v)


@pytest.mark.parametrize("case", _truncation_cases(), ids=_id)
def test_mutated_frames_decode_or_raise_corrupt_request(case: tuple[int, int]) -> None:
    import random

    key, version = case
    msg = REGISTRY[key][0]
    frame = encode_request(key, version, 5, "c", sample(msg.fields, version, version in msg.flexible))[4:]
    rnd = random.Random(key * 100 + version)
    for _ in range(300):
        mutated = bytearray(frame)
        for _ in range(rnd.randint(1, 4)):
            mutated[rnd.randrange(8, len(mutated))] = rnd.randrange(256)
        try:
            decode_request(bytes(mutated))
        except CorruptRequest:
            pass
