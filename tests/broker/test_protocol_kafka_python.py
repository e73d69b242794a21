"""Cross-checks against kafka-python's hand-written protocol classes (``kafka.protocol.old``).

Those classes were written independently of Kafka's JSON schemas (and of ours), so agreeing with them
byte for byte is real evidence: for every (API, version, direction) that both define, a body encoded
by our codec must decode with theirs, consume exactly all bytes, re-encode to the same bytes, and give
the same values in wire order; and their encoding must decode with ours.
"""

from __future__ import annotations

import importlib
import inspect
import io
import uuid
from typing import Any

import pytest

from broker.protocol import REGISTRY, SUPPORTED, ApiKey, decode_request, decode_response
from broker.protocol.codec import message_codec
from broker.protocol.headers import encode_request_header
from broker.protocol.schema import Field

from .test_protocol_messages import sample

_OLD_MODULES = (
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "find_coordinator",
    "commit",
    "group",
    "init_producer_id",
    "admin",
)


def _old_classes() -> dict[tuple[int, int, bool], type]:
    found: dict[tuple[int, int, bool], type] = {}
    for name in _OLD_MODULES:
        mod = importlib.import_module(f"kafka.protocol.old.{name}")
        for cls_name, cls in inspect.getmembers(mod, inspect.isclass):
            key = getattr(cls, "API_KEY", None)
            version = getattr(cls, "API_VERSION", None)
            if not isinstance(key, int) or not isinstance(version, int) or "_v" not in cls_name:
                continue
            if not cls_name.endswith(f"_v{version}"):
                continue
            is_request = cls_name.split("_v")[0].endswith("Request")
            if key in SUPPORTED and SUPPORTED[key][0] <= version <= SUPPORTED[key][1]:
                found[(key, version, is_request)] = cls
    return found


# kafka-python classes that disagree with Kafka's own schemas (checked against the 3.9 JSON): they cannot witness.
_THEIRS_WRONG = {
    # DescribeLogDirsRequest_v0 declares `partitions` as one Int32; Kafka's schema has an array of Int32.
    (ApiKey.DESCRIBE_LOG_DIRS, 0, True): "partitions is []int32 in Kafka",
    # DescribeAcls v2 is a flexible version in Kafka ("flexibleVersions": "2+"); kafka-python reuses v1's schema.
    (ApiKey.DESCRIBE_ACLS, 2, True): "v2 is flexible in Kafka",
    (ApiKey.DESCRIBE_ACLS, 2, False): "v2 is flexible in Kafka",
}
_CLASSES = {case: cls for case, cls in _old_classes().items() if case not in _THEIRS_WRONG}
_CASES = sorted(_CLASSES)


def _id(case: tuple[int, int, bool]) -> str:
    return f"{ApiKey(case[0]).name}-v{case[1]}-{'req' if case[2] else 'resp'}"


def _flatten_mine(fields: tuple[Field, ...], version: int, flex: bool, body: dict[str, Any], out: list[Any]) -> None:
    for fld in fields:
        if version not in fld.versions or (fld.tag is not None and version in fld.tagged):
            continue
        value = body[fld.key]
        if fld.is_array and value is not None:
            out.append(("len", len(value)))
            for e in value:
                if fld.is_struct:
                    _flatten_mine(fld.fields, version, flex, e, out)
                else:
                    out.append(_norm(e))
        elif fld.is_struct:
            _flatten_mine(fld.fields, version, flex, value, out)
        else:
            out.append(_norm(value))


def _norm(value: Any) -> Any:
    if isinstance(value, uuid.UUID) and value.int == 0:
        return None  # kafka-python decodes the zero UUID as None
    return value


def _flatten_theirs(value: Any, out: list[Any]) -> None:
    if hasattr(value, "SCHEMA"):
        for name in value.SCHEMA.names:
            _flatten_theirs(getattr(value, name), out)
    elif isinstance(value, list):
        out.append(("len", len(value)))
        for e in value:
            _flatten_theirs(e, out)
    elif isinstance(value, tuple):
        for e in value:
            _flatten_theirs(e, out)
    elif isinstance(value, dict):
        pass  # tagged-field section
    elif isinstance(value, set):
        out.append(sum(1 << bit for bit in value))  # kafka-python's BitField (authorized operations)
    else:
        out.append(value)


def test_there_is_something_to_compare() -> None:
    apis = {k for k, _, _ in _CASES}
    assert {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS} <= apis
    assert len(_CASES) > 60


@pytest.mark.parametrize("case", _CASES, ids=_id)
def test_ours_encode_theirs_decode(case: tuple[int, int, bool]) -> None:
    key, version, is_request = case
    cls = _CLASSES[case]
    msg = REGISTRY[key][0 if is_request else 1]
    flex = version in msg.flexible
    body = sample(msg.fields, version, flex)
    for fld in msg.fields:  # kafka-python cannot represent our tagged fields by name; keep them default
        if fld.tag is not None:
            body.pop(fld.key, None)
    enc, _ = message_codec(msg, version)
    chunks: list[bytes] = []
    enc(body, chunks)
    wire = b"".join(chunks)

    buf = io.BytesIO(wire)
    theirs = cls.decode(buf) if is_request else _decode_response(cls, buf)
    assert buf.tell() == len(wire), "kafka-python did not consume the whole body"
    assert theirs.encode() == wire

    mine: list[Any] = []
    _flatten_mine(msg.fields, version, flex, body, mine)
    flat: list[Any] = []
    _flatten_theirs(theirs, flat)
    assert flat == mine


@pytest.mark.parametrize("case", _CASES, ids=_id)
def test_theirs_encode_ours_decode(case: tuple[int, int, bool]) -> None:
    key, version, is_request = case
    cls = _CLASSES[case]
    msg = REGISTRY[key][0 if is_request else 1]
    flex = version in msg.flexible
    body = sample(msg.fields, version, flex)
    for fld in msg.fields:
        if fld.tag is not None:
            body.pop(fld.key, None)
    enc, _ = message_codec(msg, version)
    chunks: list[bytes] = []
    enc(body, chunks)
    theirs = (
        cls.decode(io.BytesIO(b"".join(chunks))) if is_request else _decode_response(cls, io.BytesIO(b"".join(chunks)))
    )
    wire = theirs.encode()
    if is_request:
        _, decoded = decode_request(encode_request_header(key, version, 1, "x") + wire)
    else:
        head = (1).to_bytes(4, "big") + (b"\x00" if flex and key != ApiKey.API_VERSIONS else b"")
        _, decoded = decode_response(key, version, head + wire)
    expected = dict(body)
    for fld in msg.fields:
        if fld.tag is not None and version in fld.tagged and flex:
            expected[fld.key] = fld.default
    assert decoded == expected


def _decode_response(cls: type, buf: io.BytesIO) -> Any:
    # ApiVersionsResponse.decode re-dispatches on error codes; call the plain Struct decoder.
    from kafka.protocol.old.struct import Struct

    return Struct.decode.__func__(cls, buf)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------------------
# kafka-python's schema-driven classes (kafka.protocol.{metadata,producer,consumer,admin}) cover the flexible
# versions too.  They read the same Apache JSON files, but their encoder/decoder is an independent
# implementation, so byte equality checks our compact/tagged-field mechanics.


def _new_style_classes() -> dict[tuple[int, bool], type]:
    from kafka.protocol.api_message import ApiMessage

    found: dict[tuple[int, bool], type] = {}
    for name in ("metadata", "producer", "consumer", "admin"):
        mod = importlib.import_module(f"kafka.protocol.{name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, ApiMessage) and cls is not ApiMessage and getattr(cls, "_json", None):
                found[(cls.API_KEY, cls.type == "request")] = cls
    return found


_NEW = _new_style_classes()
_NEW_CASES = sorted(
    (key, v, is_request)
    for (key, is_request) in _NEW
    if key in SUPPORTED
    for v in range(SUPPORTED[key][0], SUPPORTED[key][1] + 1)
)


def _norm_theirs(x: Any) -> Any:
    # kafka-python turns *authorized_operations into bit sets under other names: leave those out.
    if isinstance(x, dict):
        return {k: _norm_theirs(v) for k, v in x.items() if "authorized_operations" not in k}
    if isinstance(x, list):
        return [_norm_theirs(e) for e in x]
    if isinstance(x, bytearray | memoryview):
        return bytes(x)
    return x


def test_new_style_coverage_includes_flexible_versions() -> None:
    flexible = {(k, v) for k, v, _ in _NEW_CASES if v in REGISTRY[k][0].flexible}
    assert {(ApiKey.METADATA, 12), (ApiKey.PRODUCE, 9), (ApiKey.FETCH, 12), (ApiKey.API_VERSIONS, 3)} <= flexible


@pytest.mark.parametrize("case", _NEW_CASES, ids=_id)
def test_schema_driven_kafka_python_agrees(case: tuple[int, int, bool]) -> None:
    key, version, is_request = case
    cls = _NEW[(key, is_request)]
    msg = REGISTRY[key][0 if is_request else 1]
    body = sample(msg.fields, version, version in msg.flexible)
    if key == ApiKey.API_VERSIONS and not is_request:
        body["error_code"] = 0  # kafka-python re-reads errored ApiVersions responses as v0 (KIP-511 client side)
    enc, _ = message_codec(msg, version)
    chunks: list[bytes] = []
    enc(body, chunks)
    wire = b"".join(chunks)

    theirs = cls.decode(wire, version=version)
    theirs._header = None
    assert bytes(theirs.encode()) == wire
    assert _norm_theirs(theirs.to_dict(json=False)) == _norm_theirs(body)
