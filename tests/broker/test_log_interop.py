"""The log against an independent record-batch implementation (kafka-python's), and its locking behaviour."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker.log import CheckpointDelay, LogConfig
from tests.broker.test_log_support import batch, open_log


def _client_batch(i: int, compression: int) -> tuple[bytes, list[tuple[int, bytes | None, bytes, list]]]:
    builder = MemoryRecordsBuilder(magic=2, compression_type=compression, batch_size=1 << 20)
    records = []
    for j in range(1 + i % 7):
        key = None if j == 3 else f"key-{i}-{j}".encode()
        value = f"value-{i}-{j}-".encode() * (1 + j)
        headers = [("trace", f"{i}.{j}".encode())] if j % 2 else []
        ts = 1_600_000_000_000 + i * 100 + j
        builder.append(timestamp=ts, key=key, value=value, headers=headers)
        records.append((ts, key, value, headers))
    builder.close()
    return bytes(builder.buffer()), records


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip: the codecs kafka-python has without extras
def test_batches_built_by_kafka_python_round_trip_byte_identical(tmp_path: Path, compression: int) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=4_000, index_interval_bytes=500))
    expected: list[tuple[int, int, bytes | None, bytes, list]] = []
    payloads: dict[int, bytes] = {}
    for i in range(60):
        payload, records = _client_batch(i, compression)
        info = log.append_as_leader(payload, 2)
        payloads[info.first_offset] = payload
        assert info.message_count == len(records)
        expected += [(info.first_offset + j, *r) for j, r in enumerate(records)]
    assert len(log.segments) > 2
    got: list[tuple[int, int, bytes | None, bytes, list]] = []
    codecs: set[int] = set()
    offset = 0
    while offset < log.log_end_offset:
        batches = MemoryRecords(log.read(offset, 3_000).records)
        while batches.has_next():
            b = batches.next_batch()
            assert b.validate_crc()
            codecs.add(b.compression_type)
            got += [(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in b]
        offset = got[-1][0] + 1
    assert got == expected
    assert compression in codecs  # kafka-python leaves a batch uncompressed when compression would not pay
    for first, payload in payloads.items():  # byte for byte, but for the patched BaseOffset/PartitionLeaderEpoch
        stored = log.read(first, 1).records
        assert stored[:len(payload)][16:] == payload[16:]
        assert int.from_bytes(stored[:8], "big") == first
        assert int.from_bytes(stored[12:16], "big") == 2
    some = expected[200]
    assert log.offset_for_timestamp(some[1]) == (some[1], some[0])


def test_reads_do_not_wait_for_an_append_stuck_in_a_slow_epoch_checkpoint(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def stuck_fsync(_seconds: float) -> None:  # the injected "slow disk": blocks until released
        entered.set()
        release.wait(timeout=30)

    log = open_log(tmp_path, epoch_checkpoint_delay=CheckpointDelay(1, sleep=stuck_fsync))
    log.update_high_watermark(0)
    writer = threading.Thread(target=log.append_as_leader, args=(batch(2), 1))
    writer.start()  # the new epoch makes this append write leader-epoch-checkpoint under the log lock
    try:
        assert entered.wait(timeout=30)
        assert log.read(0, 100).records == b""  # answered while the append holds the log lock
        assert log.offset_for_timestamp(-2) == (-1, 0)
    finally:
        release.set()
        writer.join(timeout=30)
    assert not writer.is_alive()
    assert log.log_end_offset == 2
    log.close()


def test_flush_policies_move_the_recovery_point(tmp_path: Path) -> None:
    now = [0]
    log = open_log(tmp_path, LogConfig(flush_messages=5, flush_ms=1_000), clock=lambda: now[0])
    log.append_as_leader(batch(3), 0)
    assert log.recovery_point == 0
    log.append_as_leader(batch(3), 0)  # 6 unflushed >= flush.messages
    assert log.recovery_point == 6
    log.append_as_leader(batch(1), 0)
    assert log.flush_if_due() is False
    now[0] = 1_000
    assert log.flush_if_due() is True
    assert log.recovery_point == 7
    log.append_as_leader(batch(1), 0, durable=True)
    assert log.recovery_point == 8
    log.close()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])  # gzip, snappy (xerial framing, as Java writes it), lz4, zstd
def test_compressed_batches_from_the_wire_codec_builder(tmp_path: Path, codec: int) -> None:
    from broker.protocol.records import build_batch, decode_records, parse_batches

    log = open_log(tmp_path, LogConfig(segment_bytes=3_000, index_interval_bytes=300))
    sent = []
    for i in range(40):
        records = [(f"k{i}-{j}".encode(), f"v{i}-{j}".encode() * 20, [("h", b"x")]) for j in range(5)]
        log.append_as_leader(build_batch(records, base_timestamp=50_000 + 100 * i, timestamp_step=10,
                                         compression=codec), 1)
        sent += [(r[0], r[1]) for r in records]
    got, offset = [], 0
    while offset < log.log_end_offset:
        data = log.read(offset, 2_000).records
        for info in parse_batches(data):
            assert info.compression == codec
            got += [(r.offset, r.key, r.value) for r in decode_records(data, info)]
        offset = got[-1][0] + 1
    assert got == [(o, k, v) for o, (k, v) in enumerate(sent)]
    assert log.offset_for_timestamp(51_225) == (51_230, 63)  # batch 12 holds 51_200..51_240 at offsets 60..64
