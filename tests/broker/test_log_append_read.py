"""Appends and reads on one partition log: offsets, index lookups, rolls, validation, ListOffsets."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import pytest

from broker.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    CorruptRecordError,
    LogConfig,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from broker.log._batch import validate_batches
from broker.protocol.error_codes import ErrorCode
from tests.broker.test_log_support import TP, base_offsets, batch, compress, open_log

SMALL = LogConfig(segment_bytes=4_000, index_interval_bytes=300)


def test_offsets_are_assigned_and_patched_and_bytes_round_trip(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    payloads = [batch(4, tag=i) for i in range(3)]
    infos = [log.append_as_leader(p, leader_epoch=7) for p in payloads]
    assert [(i.first_offset, i.last_offset, i.message_count) for i in infos] == [(0, 3, 4), (4, 7, 4), (8, 11, 4)]
    assert infos[-1].log_append_time == -1
    assert log.log_end_offset == 12
    data = log.read(0, 1_000_000).records
    assert base_offsets(data) == [0, 4, 8]
    pos = 0
    for i, original in enumerate(payloads):
        stored = data[pos:pos + len(original)]
        assert struct.unpack_from(">qii", stored) == (i * 4, len(original) - 12, 7)  # base offset, length, epoch
        assert stored[16:] == original[16:]  # magic, CRC and records untouched
        pos += len(original)
    validate_batches(data, None)  # the CRC still holds after patching
    log.close()


def test_read_at_every_offset_returns_the_batch_holding_it(tmp_path: Path) -> None:
    log = open_log(tmp_path, SMALL)
    for i in range(60):
        log.append_as_leader(batch(1 + i % 5, size=30 + i, tag=i), 1)
    assert len(log.segments) > 3
    assert all(s.offset_index.entries > 0 for s in log.segments[:-1])
    bounds = []
    for segment in log.segments:
        bounds += [(b.base_offset, b.last_offset) for b in segment.scan(0, segment.size, verify=True)]
    for offset in range(log.log_end_offset):
        first = base_offsets(log.read(offset, 1).records)
        holding = next(b for b in bounds if b[0] <= offset <= b[1])
        assert first == [holding[0]], offset
    log.close()


def test_segments_roll_at_segment_bytes_and_reads_cross_them(tmp_path: Path) -> None:
    logs_root = tmp_path
    log = open_log(logs_root, LogConfig(segment_bytes=1_000))
    sizes = [len(batch(3, size=40))] * 20
    for i in range(20):
        log.append_as_leader(batch(3, size=40, tag=i), 0)
    assert all(s.size <= 1_000 for s in log.segments)
    assert len(log.segments) == -(-sum(sizes) // (1_000 // sizes[0] * sizes[0]))
    assert sorted(p.name for p in (logs_root / str(TP)).glob("*.log"))[1] == f"{log.segments[1].base_offset:020d}.log"
    offset, seen = 0, []
    while offset < log.log_end_offset:
        got = base_offsets(log.read(offset, 10_000).records)
        seen += got
        offset = got[-1] + 3
    assert seen == list(range(0, 60, 3))
    log.close()


def test_segment_ms_rolls_on_record_time(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_ms=1_000))
    log.append_as_leader(batch(1, ts=10_000), 0)
    log.append_as_leader(batch(1, ts=10_500), 0)
    log.append_as_leader(batch(1, ts=11_001), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_read_limits_max_bytes_min_one_batch_and_high_watermark(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    size = len(batch(2))
    for i in range(5):
        log.append_as_leader(batch(2, tag=i), 0)
    assert base_offsets(log.read(0, size * 2 + 5).records) == [0, 2]
    assert base_offsets(log.read(3, 1).records) == [2]  # min one batch beats max_bytes
    assert log.read(3, 1, min_one_batch=False).records == b""
    assert base_offsets(log.read(0, 10**6, max_offset=4).records) == [0, 2]
    assert base_offsets(log.read(0, 10**6, max_offset=5).records) == [0, 2]  # batch 4-5 straddles the limit
    assert log.read(4, 10**6, max_offset=4).records == b""
    end = log.read(10, 10**6)
    assert (end.records, end.log_end_offset, end.log_start_offset) == (b"", 10, 0)
    assert log.update_high_watermark(99) == 10
    log.close()


@pytest.mark.parametrize("offset", [-1, 11, 1_000])
def test_out_of_range_reads(tmp_path: Path, offset: int) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(10), 0)
    with pytest.raises(OffsetOutOfRangeError) as err:
        log.read(offset, 100)
    assert err.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert str(err.value) == (f"Received request for offset {offset} for partition {TP}, but we only have log "
                              f"segments in the range 0 to 10.")
    log.close()


def _corrupt_crc(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF
    return bytes(out)


def _bad_magic(data: bytes) -> bytes:
    out = bytearray(data)
    out[16] = 1
    return bytes(out)


def _lying_length(data: bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into(">i", out, 8, len(data))  # claims 12 bytes more than there are
    return bytes(out)


@pytest.mark.parametrize(("mangle", "needle"), [
    (_corrupt_crc, "Record is corrupt (stored crc"),
    (_bad_magic, "Invalid magic byte 1"),
    (_lying_length, "exceeds the"),
    (lambda d: d[:-3], "exceeds the"),
    (lambda d: d + b"\x00\x00\x00", "trailing bytes"),
    (lambda d: b"", "no record batch"),
    (lambda d: d[:40], "exceeds the"),
], ids=["bad-crc", "bad-magic", "lying-length", "short-batch", "trailing-bytes", "empty", "header-only"])
def test_corrupt_input_is_rejected_and_the_log_stays_healthy(tmp_path: Path, mangle, needle: str) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), 0)
    good = batch(3, tag=1)
    bad = mangle(good)
    with pytest.raises(CorruptRecordError, match=needle.replace("(", r"\(")) as err:
        log.append_as_leader(good + bad if bad else bad, 0)  # a good batch in front must not be appended either
    assert err.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 2
    assert log.append_as_leader(good, 0).first_offset == 2
    assert base_offsets(log.read(0, 10**6).records) == [0, 2]
    log.close()


def test_batch_above_max_message_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(max_message_bytes=500))
    with pytest.raises(RecordTooLargeError) as err:
        log.append_as_leader(batch(5, size=200), 0)
    assert err.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0
    log.close()


def test_append_larger_than_a_segment(tmp_path: Path) -> None:
    from broker.log import RecordBatchTooLargeError

    log = open_log(tmp_path, LogConfig(segment_bytes=1_000))
    with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum configured segment size of 1000") as err:
        log.append_as_leader(batch(5, size=100) + batch(5, size=100), 0)
    assert err.value.error_code == 18  # RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0
    log.close()


def test_log_append_time_stamps_and_recomputes_crc(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"), clock=lambda: 1_700_000_000_123)
    info = log.append_as_leader(batch(3, ts=5), 0)
    assert info.log_append_time == 1_700_000_000_123
    data = log.read(0, 10**6).records
    (info2,) = validate_batches(data, None)
    assert info2.attributes & 0x08
    assert info2.max_timestamp == 1_700_000_000_123
    assert log.offset_for_timestamp(1_700_000_000_000) == (1_700_000_000_123, 0)
    log.close()


def test_follower_append_keeps_offsets_and_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    for epoch in (1, 1, 3):
        leader.append_as_leader(batch(2, tag=epoch), epoch)
    fetched = leader.read(0, 10**6).records
    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(fetched)
    assert (info.first_offset, info.last_offset, follower.log_end_offset) == (0, 5, 6)
    assert follower.read(0, 10**6).records == fetched
    assert [(e.epoch, e.start_offset) for e in follower.epoch_cache.entries()] == [(1, 0), (3, 4)]
    assert follower.end_offset_for_epoch(1) == (1, 4)
    assert follower.end_offset_for_epoch(3) == (3, 6)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(fetched)
    leader.close()
    follower.close()


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_offset_for_timestamp_finds_the_exact_record(tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path, SMALL)
    for i in range(30):  # batch i holds timestamps 10_000 + 100*i + {0, 10, 20, 30}
        raw = batch(4, ts=10_000 + 100 * i, step=10, tag=i)
        log.append_as_leader(compress(raw, codec) if codec else raw, 0)
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (-1, 0)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (-1, 120)
    assert log.offset_for_timestamp(0) == (10_000, 0)
    assert log.offset_for_timestamp(11_215) == (11_220, 50)
    assert log.offset_for_timestamp(12_930) == (12_930, 119)
    assert log.offset_for_timestamp(12_931) is None
    assert log.offset_for_timestamp(11_215, max_offset=50) is None
    log.close()


def test_concurrent_appends_and_reads_stay_consistent(tmp_path: Path) -> None:
    log = open_log(tmp_path, SMALL)
    writers, per_writer = 3, 80
    errors: list[BaseException] = []
    done = threading.Event()

    def write(tag: int) -> None:
        try:
            for i in range(per_writer):
                log.append_as_leader(batch(2, tag=tag * 1000 + i), 0)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def read() -> None:
        try:
            while not done.is_set():
                end = log.log_end_offset
                offset = 0
                while offset < end:
                    data = log.read(offset, 2_000).records
                    offsets = base_offsets(data)
                    assert offsets, offset
                    assert offsets[0] <= offset, (offset, offsets)
                    assert offsets == list(range(offsets[0], offsets[0] + 2 * len(offsets), 2))
                    validate_batches(data, None)
                    offset = offsets[-1] + 2
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(writers)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads[:writers]:
        t.join(timeout=60)
    done.set()
    threads[-1].join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert log.log_end_offset == writers * per_writer * 2
    assert base_offsets(log.read(0, 10**9).records)[:3] == [0, 2, 4]
    log.close()


def _recrc(data: bytearray) -> bytes:
    import crc32c

    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize("case", ["garbage-gzip", "unknown-codec", "count-too-small", "record-length-lies"])
def test_record_level_validation_on_the_leader(tmp_path: Path, case: str) -> None:
    raw = bytearray(batch(4, tag=3))
    if case == "garbage-gzip":
        bad = bytearray(compress(bytes(raw), 1))
        bad[-12:] = b"\xff" * 12  # deflate stream and gzip trailer ruined, CRC-32C made valid again
    elif case == "unknown-codec":
        bad = bytearray(raw)
        struct.pack_into(">h", bad, 21, 6)
    elif case == "count-too-small":
        bad = bytearray(raw)
        struct.pack_into(">i", bad, 57, 3)  # 4 records follow
    else:
        bad = bytearray(raw)
        bad[61] = 0x7E  # first record's length varint: 63 bytes, longer than the record
    log = open_log(tmp_path)
    with pytest.raises(CorruptRecordError, match="Invalid records in the batch"):
        log.append_as_leader(_recrc(bad), 0)
    assert log.log_end_offset == 0
    assert log.append_as_leader(bytes(raw), 0).last_offset == 3
    log.close()
