"""Property tests of record batches (broker/protocol/batch.py, records.py, compression.py): built batches decode to
their records; mutated batches, and garbage records behind a valid header and CRC, raise only CorruptRecord, in
bounded time and memory."""

from __future__ import annotations

import itertools
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol.batch import encode_batch
from broker.protocol.compression import MAX_DECOMPRESSED_BATCH, compress
from broker.protocol.errors import CorruptRecord
from broker.protocol.records import (
    Compression,
    Record,
    build_batch,
    check_record_framing,
    decode_records,
    parse_batches,
    record_offsets_and_timestamps,
    records_of,
    validate_produce_records,
)
from broker.protocol.varint import write_varint
from tests.fuzz.budget import examples
from tests.fuzz.strategies import mutated

pytestmark = pytest.mark.fuzz

CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]

blobs = st.one_of(st.none(), st.binary(max_size=16))
headers = st.lists(st.tuples(st.text(max_size=6), blobs), max_size=2)
records = st.lists(st.tuples(blobs, blobs, headers), max_size=5)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


def _walk(blob: bytes) -> None:
    """What a broker reads of a records blob: the batches, each one's offsets and timestamps (the time index and
    ListOffsets read them from the log), its framing and its records (a leader's append checks them)."""
    for batch in parse_batches(blob):
        # Every record takes at least one byte: a walk longer than the payload believed a count the bytes cannot
        # hold (a record count of 2^31 over a few bytes must end with an error, not after 2^31 steps).
        most = len(records_of(blob, batch))
        steps = sum(1 for _ in itertools.islice(record_offsets_and_timestamps(blob, batch), most + 1))
        assert steps <= most, f"{steps} records read from {most} bytes"
        check_record_framing(blob, batch)
        decode_records(blob, batch)


def _only_corrupt_record(blob: bytes) -> None:
    tracemalloc.start()
    try:
        try:
            _walk(blob)
        except CorruptRecord:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= (1 << 20) + 256 * len(blob), f"{peak} bytes allocated for a {len(blob)}-byte batch"


@settings(max_examples=examples(60))
@given(recs=records, codec=st.sampled_from(CODECS), base_offset=st.integers(0, 2**40),
       base_timestamp=st.integers(0, 2**41), step=st.integers(0, 1000))
def test_built_batches_decode_to_their_records(recs: list[tuple[bytes | None, bytes | None,
                                                                list[tuple[str, bytes | None]]]],
                                               codec: int, base_offset: int, base_timestamp: int, step: int) -> None:
    blob = build_batch(recs, base_offset=base_offset, base_timestamp=base_timestamp, timestamp_step=step,
                       compression=codec)
    (batch,) = parse_batches(blob)
    check_record_framing(blob, batch)
    expected = [Record(base_offset + i, base_timestamp + i * step, k, v, tuple(h)) for i, (k, v, h) in
                enumerate(recs)]
    assert decode_records(blob, batch) == expected
    assert list(record_offsets_and_timestamps(blob, batch)) == [(r.offset, r.timestamp) for r in expected]
    if recs:
        assert validate_produce_records(blob, 9) == batch


@settings(max_examples=examples(150))
@given(data=st.data(), recs=records, codec=st.sampled_from(CODECS))
def test_mutated_batches_raise_only_corrupt_record(data: st.DataObject, recs: list[tuple[bytes | None, bytes | None,
                                                                                      list[tuple[str, bytes | None]]]],
                                                   codec: int) -> None:
    blob = build_batch(recs, compression=codec)
    blob = data.draw(mutated(blob + data.draw(st.sampled_from([b"", blob]))))  # one batch or two
    _only_corrupt_record(blob)
    try:
        validate_produce_records(blob, data.draw(st.integers(3, 9)))
    except CorruptRecord:
        pass


def _varint(value: int) -> bytes:
    out = bytearray()
    write_varint(value, out)
    return bytes(out)


# Record payloads that look like records: runs of signed varints (lengths, deltas, counts; negative ones included)
# and raw bytes, so the record walkers get past their first varint.
record_payloads = st.lists(st.one_of(st.integers(-3, 40).map(_varint), st.binary(min_size=1, max_size=8)),
                           max_size=12).map(b"".join)
record_counts = st.one_of(st.integers(0, 8), st.just(2**31 - 1), st.integers(0, 2**31 - 1))


@settings(max_examples=examples(200))
@given(payload=record_payloads, codec=st.sampled_from([*CODECS, 5, 7]), count=record_counts,
       extra_delta=st.integers(0, 5), base_offset=int64, base_timestamp=int64, max_timestamp=int64)
def test_garbage_records_behind_a_valid_header_and_crc_raise_only_corrupt_record(
        payload: bytes, codec: int, count: int, extra_delta: int, base_offset: int, base_timestamp: int,
        max_timestamp: int) -> None:
    # The CRC and the header's counts pass, so every record-level check is reached; counts up to 2^31 over a few
    # bytes included.
    delta = min(max(count - 1, 0) + extra_delta, 2**31 - 1)
    blob = encode_batch(payload, base_offset=base_offset, partition_leader_epoch=0, attributes=codec,
                        last_offset_delta=delta, base_timestamp=base_timestamp, max_timestamp=max_timestamp,
                        producer_id=-1, producer_epoch=-1, base_sequence=-1, record_count=count)
    _only_corrupt_record(blob)


def test_a_negative_record_length_ends_the_offsets_walk() -> None:
    # Found by the property above: record length -1 stepped back onto the same bytes, so the offsets walk of a batch
    # claiming 2^31 - 1 records ran 2^31 steps (or an IndexError escaped once the position went below zero).
    payload = _varint(-1) + _varint(0) + _varint(0)
    blob = encode_batch(payload, base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=2**31 - 1,
                        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                        record_count=2**31 - 1)
    (batch,) = parse_batches(blob)
    with pytest.raises(CorruptRecord, match="negative record length -1"):
        list(itertools.islice(record_offsets_and_timestamps(blob, batch), 10))


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD],
                         ids=Compression.NAMES[1:])
def test_a_compression_bomb_is_refused_without_decompressing_it_whole(codec: int) -> None:
    # 256 MiB of zeros: 8 KiB in zstd, 260 KiB in gzip, 12 MiB in snappy; the limit is MAX_DECOMPRESSED_BATCH.
    bomb = compress(codec, bytes(4 * MAX_DECOMPRESSED_BATCH))
    blob = encode_batch(bomb, base_offset=0, partition_leader_epoch=0, attributes=codec, last_offset_delta=0,
                        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                        record_count=1)
    (batch,) = parse_batches(blob)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecord, match="exceeds"):
            check_record_framing(blob, batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 2 * MAX_DECOMPRESSED_BATCH, f"{peak} bytes allocated to refuse a {len(blob)}-byte batch"
