"""Record batch v2: validation, patching, builder/decoder, and cross-checks with kafka-python's implementation."""

from __future__ import annotations

import struct

import crc32c
import pytest

from broker.protocol import CorruptRecord, ErrorCode
from broker.protocol.records import (
    BATCH_HEADER_SIZE,
    Compression,
    Record,
    build_batch,
    decode_records,
    parse_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

RECS = [
    (b"k1", b"v1"),
    (None, b"value-without-key"),
    (b"k3", None, [("h", b"x"), ("trace", None)]),
]


@pytest.mark.parametrize(
    "codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_build_parse_decode_round_trip(codec: int) -> None:
    blob = build_batch(
        RECS,
        base_offset=100,
        base_timestamp=1_700_000_000_000,
        compression=codec,
        producer_id=7,
        producer_epoch=1,
        base_sequence=5,
    )
    (info,) = parse_batches(blob)
    assert (info.position, info.size) == (0, len(blob))
    assert info.base_offset == 100
    assert info.last_offset_delta == 2
    assert info.last_offset == 102
    assert info.record_count == 3
    assert info.compression == codec
    assert info.base_timestamp == 1_700_000_000_000
    assert info.max_timestamp == 1_700_000_000_002
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (7, 1, 5)
    assert info.magic == 2
    assert not info.is_transactional
    assert not info.is_control
    assert not info.log_append_time
    assert decode_records(blob, info) == [
        Record(100, 1_700_000_000_000, b"k1", b"v1"),
        Record(101, 1_700_000_000_001, None, b"value-without-key"),
        Record(102, 1_700_000_000_002, b"k3", None, (("h", b"x"), ("trace", None))),
    ]


def test_several_batches_in_one_blob() -> None:
    a = build_batch(RECS[:1], base_offset=0)
    b = build_batch(RECS, base_offset=1, compression=Compression.GZIP)
    infos = parse_batches(a + b)
    assert [(i.position, i.size, i.record_count) for i in infos] == [(0, len(a), 1), (len(a), len(b), 3)]
    assert parse_batches(b"") == []


def test_patching_offset_and_epoch_keeps_the_crc_valid() -> None:
    a = build_batch(RECS)
    blob = bytearray(a + build_batch(RECS[:2]))
    second = parse_batches(blob)[1]
    set_base_offset(blob, second.position, 4242)
    set_partition_leader_epoch(blob, second.position, 17)
    again = parse_batches(blob)[1]
    assert again.base_offset == 4242
    assert again.partition_leader_epoch == 17
    assert again.crc == second.crc
    assert [r.offset for r in decode_records(blob, again)] == [4242, 4243]


def test_log_append_time_recomputes_the_crc() -> None:
    blob = bytearray(build_batch(RECS, base_timestamp=5))
    info = parse_batches(blob)[0]
    set_log_append_time(blob, info.position, info.size, 999)
    patched = parse_batches(blob)[0]  # CRC must still validate
    assert patched.log_append_time
    assert patched.max_timestamp == 999


def test_crc_mismatch_is_corrupt_message() -> None:
    blob = bytearray(build_batch(RECS))
    blob[-1] ^= 0xFF
    with pytest.raises(CorruptRecord, match="is corrupt") as exc:
        parse_batches(bytes(blob))
    assert exc.value.error_code == ErrorCode.CORRUPT_MESSAGE


def test_wrong_magic_is_rejected() -> None:
    blob = bytearray(build_batch(RECS))
    blob[16] = 1
    with pytest.raises(CorruptRecord, match="magic 1"):
        parse_batches(bytes(blob))


def test_every_truncation_is_rejected() -> None:
    blob = build_batch(RECS) + build_batch(RECS[:1])
    for cut in range(1, len(blob)):
        if cut == len(build_batch(RECS)):
            continue  # a whole first batch is a valid blob
        with pytest.raises(CorruptRecord):
            parse_batches(blob[:cut])


def test_length_below_header_size_is_rejected() -> None:
    blob = bytearray(build_batch(RECS))
    struct.pack_into(">i", blob, 8, BATCH_HEADER_SIZE - 13)
    with pytest.raises(CorruptRecord, match="smaller than the minimum"):
        parse_batches(bytes(blob))


def test_garbled_records_with_valid_crc_fail_on_decode_not_crash() -> None:
    blob = bytearray(build_batch(RECS))
    blob[BATCH_HEADER_SIZE] = 0x7F  # first record's length varint now claims 63 bytes... or less than present
    struct.pack_into(">I", blob, 17, crc32c.crc32c(bytes(blob[21:])))
    (info,) = parse_batches(bytes(blob))
    with pytest.raises(CorruptRecord):
        decode_records(bytes(blob), info)


def test_garbage_compressed_payload_is_corrupt() -> None:
    blob = bytearray(build_batch(RECS, compression=Compression.ZSTD))
    blob[BATCH_HEADER_SIZE : BATCH_HEADER_SIZE + 4] = b"\x00\x00\x00\x00"
    struct.pack_into(">I", blob, 17, crc32c.crc32c(bytes(blob[21:])))
    (info,) = parse_batches(bytes(blob))
    with pytest.raises(CorruptRecord, match="decompress"):
        decode_records(bytes(blob), info)


# ----------------------------------------------------------------------------------------- kafka-python


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_kafka_python_builds_we_parse(codec: int) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    big = b"x" * 300  # compressible, so kafka-python keeps the compression
    builder.append(0, timestamp=1000, key=b"a", value=big, headers=[])
    builder.append(1, timestamp=1005, key=None, value=b"2", headers=[("h", b"v")])
    blob = bytes(builder.build())
    (info,) = parse_batches(blob)
    assert info.record_count == 2
    assert info.compression == codec
    assert info.max_timestamp == 1005
    assert decode_records(blob, info) == [Record(0, 1000, b"a", big), Record(1, 1005, None, b"2", (("h", b"v"),))]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_we_build_kafka_python_reads(codec: int) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    blob = build_batch(RECS, base_offset=10, base_timestamp=50, compression=codec)
    batch = DefaultRecordBatch(blob)
    assert batch.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [
        (10, 50, b"k1", b"v1", []),
        (11, 51, None, b"value-without-key", []),
        (12, 52, b"k3", None, [("h", b"x"), ("trace", None)]),
    ]


# ----------------------------------------------------------------------------------------- produce validation


def test_validate_produce_records_accepts_one_batch() -> None:
    from broker.protocol.records import validate_produce_records

    info = validate_produce_records(build_batch(RECS, compression=Compression.ZSTD), 7)
    assert info.record_count == 3


@pytest.mark.parametrize(
    ("blob", "version", "code", "text"),
    [
        (b"", 3, ErrorCode.INVALID_RECORD, "at least one record batch"),
        (None, 9, ErrorCode.INVALID_RECORD, "at least one record batch"),
        (build_batch(RECS) + build_batch(RECS), 9, ErrorCode.INVALID_RECORD, "exactly one record batch"),
        (build_batch(RECS, compression=Compression.ZSTD), 6, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "ZStandard"),
    ],
)
def test_validate_produce_records_errors(blob: bytes | None, version: int, code: int, text: str) -> None:
    from broker.protocol.records import validate_produce_records

    with pytest.raises(CorruptRecord, match=text) as exc:
        validate_produce_records(blob, version)
    assert exc.value.error_code == code


def test_validate_produce_records_magic_and_crc() -> None:
    from broker.protocol.records import validate_produce_records

    old = bytearray(build_batch(RECS))
    old[16] = 1
    with pytest.raises(CorruptRecord, match="magic version 2") as exc:
        validate_produce_records(bytes(old), 3)
    assert exc.value.error_code == ErrorCode.INVALID_RECORD
    bad_crc = bytearray(build_batch(RECS))
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptRecord) as exc:
        validate_produce_records(bytes(bad_crc), 3)
    assert exc.value.error_code == ErrorCode.CORRUPT_MESSAGE
