"""Retention by size and time, log start offset increments (with Kafka's exact log lines), the LogManager."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from broker.log import (
    LogConfig,
    LogDirInUseError,
    LogManager,
    LogStartOffsetIncrementReason,
    OffsetOutOfRangeError,
    TopicPartition,
)
from broker.log.checkpoint import read_offsets_checkpoint
from tests.broker.test_log_support import TP, base_offsets, batch, new_log4j, open_log, server_log
from tests.polling import wait_until

SEGMENT = LogConfig(segment_bytes=1_000, index_interval_bytes=200, retention_ms=-1)  # record times are in 1970


class Clock:
    """A settable clock (ms)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _ident(tmp_path: Path) -> str:
    return f"[Log partition={TP}, dir={tmp_path}] "


def _epoch_line(count: int, offset: int, left: int) -> str:
    return (f"INFO Cleared earliest {count} entries from epoch cache based on passed offset {offset} leaving {left} "
            f"in EpochFile for partition {TP} (kafka.server.epoch.LeaderEpochFileCache)")


def test_retention_by_size_deletes_oldest_whole_segments(tmp_path: Path) -> None:
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SEGMENT.with_overrides({"retention.bytes": "2500"}), logs)
    for i in range(30):
        log.append_as_leader(batch(3, size=30, tag=i), 0)
    log.update_high_watermark(log.log_end_offset)
    segments = list(log.segments)
    total = sum(s.size for s in segments)
    doomed, excess = [], total - 2500
    for s in segments:
        if excess - s.size < 0:
            break
        excess -= s.size
        doomed.append(s)
    assert len(doomed) >= 2
    expected, size = [], total
    for s in doomed:
        size -= s.size
        expected.append(f"INFO {_ident(tmp_path)}Deleting segment {s} due to retention size 2500 breach. Log size "
                        f"after deletion will be {size}. (kafka.log.Log)")
    new_start = segments[len(doomed)].base_offset
    expected += [f"INFO {_ident(tmp_path)}Incremented log start offset to {new_start} due to segment deletion "
                 f"(kafka.log.Log)", _epoch_line(1, new_start, 1)]
    before = len(server_log(logs))
    assert log.delete_old_segments() == len(doomed)
    assert server_log(logs)[before:] == expected
    assert log.log_start_offset == new_start
    assert 2500 <= log.size_bytes < 2500 + log.segments[0].size  # Kafka keeps at least retention.bytes
    assert not any(s.log_path.exists() for s in doomed)
    assert base_offsets(log.read(new_start, 10**6).records)[0] == new_start
    with pytest.raises(OffsetOutOfRangeError):
        log.read(new_start - 1, 100)
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries()] == [(0, new_start)]
    assert log.delete_old_segments() == 0
    log.close()


def test_retention_by_time_respects_the_high_watermark_and_rolls_when_everything_goes(tmp_path: Path) -> None:
    clock = Clock(1_000_000)
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SEGMENT.with_overrides({"retention.ms": "60000"}), logs, clock=clock)
    for i in range(12):
        log.append_as_leader(batch(3, ts=900_000 + i * 1_000, size=30, tag=i), 0)
    log.update_high_watermark(0)
    clock.now = 2_000_000  # everything is older than retention.ms ...
    assert log.delete_old_segments() == 0  # ... but nothing below the high watermark may go
    segments = list(log.segments)
    described = [str(s) for s in segments]
    log.update_high_watermark(log.log_end_offset)
    before = len(server_log(logs))
    assert log.delete_old_segments() == len(segments)
    end = log.log_end_offset
    lines = server_log(logs)[before:]
    assert re.sub(r" in \d+ ms\.", " in N ms.", lines[0]) == (
        f"INFO {_ident(tmp_path)}Rolled new log segment at offset {end} in N ms. (kafka.log.Log)")
    assert lines[1:1 + len(segments)] == [
        f"INFO {_ident(tmp_path)}Deleting segment {s} due to retention time 60000ms breach based on the largest "
        f"record timestamp in the segment (kafka.log.Log)" for s in described]
    assert lines[1 + len(segments):] == [
        f"INFO {_ident(tmp_path)}Incremented log start offset to {end} due to segment deletion (kafka.log.Log)",
        _epoch_line(1, end, 1)]
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (end, end, 1)
    assert log.read(end, 100).records == b""
    assert log.append_as_leader(batch(1, ts=1_999_999), 0).first_offset == end
    log.close()


def test_delete_records_moves_the_start_then_retention_drops_the_segments_below(tmp_path: Path) -> None:
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SEGMENT, logs)
    for i in range(20):
        log.append_as_leader(batch(3, size=30, tag=i), 1 if i < 10 else 2)
    log.update_high_watermark(45)
    with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark 45"):
        log.increment_log_start_offset(46, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION)
    before = len(server_log(logs))
    assert log.increment_log_start_offset(40, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION) is True
    assert log.increment_log_start_offset(39, LogStartOffsetIncrementReason.LEADER_OFFSET_INCREMENTED) is False
    assert server_log(logs)[before:] == [
        f"INFO {_ident(tmp_path)}Incremented log start offset to 40 due to client delete records request "
        f"(kafka.log.Log)", _epoch_line(2, 40, 1)]
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries()] == [(2, 40)]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(39, 100)
    assert base_offsets(log.read(40, 1).records) == [39]  # the whole batch holding 40
    below = [str(s) for i, s in enumerate(log.segments[:-1]) if log.segments[i + 1].base_offset <= 40]
    before = len(server_log(logs))
    assert log.delete_old_segments() == len(below)
    assert server_log(logs)[before:] == [
        f"INFO {_ident(tmp_path)}Deleting segments due to log start offset 40 breach: {','.join(below)} "
        f"(kafka.log.Log)"]
    assert log.log_start_offset == 40
    log.close()


def test_deleted_segments_stay_readable_for_readers_in_flight(tmp_path: Path) -> None:
    clock = Clock(10_000)
    log = open_log(tmp_path, SEGMENT.with_overrides({"retention.bytes": "0", "file.delete.delay.ms": "500"}),
                   clock=clock)
    for i in range(10):
        log.append_as_leader(batch(3, size=30, tag=i), 0)
    log.update_high_watermark(log.log_end_offset)
    old = log.segments[0]
    assert log.delete_old_segments() > 0
    assert not old.log_path.exists()
    assert base_offsets(old.read(0, 10**6, old.size, True) or b"")[0] == 0  # descriptor still open
    clock.now += 501
    assert log.close_retired_segments() > 0
    log.close()


def test_log_manager_creates_checkpoints_and_reloads(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    logs = new_log4j(tmp_path)
    manager = LogManager(dirs, SEGMENT, log4j=logs)
    manager.startup()
    with pytest.raises(LogDirInUseError):
        LogManager(dirs[:1], SEGMENT, log4j=logs).startup()
    tps = [TopicPartition("orders", p) for p in range(4)]
    for tp in tps:
        log = manager.get_or_create_log(tp)
        for i in range(10):
            log.append_as_leader(batch(2, size=30, tag=i), 0)
        log.update_high_watermark(log.log_end_offset)
    assert manager.get_or_create_log(tps[0]) is manager.get_log(tps[0])
    assert sorted(len(manager.logs_in(d.resolve())) for d in dirs) == [2, 2]
    manager.get_log(tps[1]).increment_log_start_offset(6, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION)
    manager.set_topic_config("orders", {"retention.bytes": "100"})
    assert manager.cleanup_logs() > 0
    with pytest.raises(ValueError, match="illegal"):
        manager.get_or_create_log(TopicPartition("bad/name", 0))
    assert manager.truncate_to(tps[2], 14) is True
    written: dict[TopicPartition, int] = {}
    for d in dirs:  # checkpointed at once, not at the next scheduler pass
        written |= read_offsets_checkpoint(d / "recovery-point-offset-checkpoint")
    assert written[tps[2]] == manager.get_log(tps[2]).recovery_point <= 14
    for tag in (7, 8, 9):  # back to 20
        manager.get_log(tps[2]).append_as_leader(batch(2, size=30, tag=tag), 0)
    manager.get_log(tps[2]).update_high_watermark(20)
    assert manager.delete_log(tps[3]) is True
    assert manager.get_log(tps[3]) is None
    starts = {tp: manager.get_log(tp).log_start_offset for tp in tps[:3]}
    manager.shutdown()
    assert all((d / ".kafka_cleanshutdown").exists() for d in dirs)
    recovery: dict[TopicPartition, int] = {}
    for d in dirs:
        recovery |= read_offsets_checkpoint(d / "recovery-point-offset-checkpoint")
    assert recovery == dict.fromkeys(tps[:3], 20)
    assert not any((d / f"{tps[3]}").exists() for d in dirs)

    (dirs[0] / "replication-offset-checkpoint").write_text("0\n7\ngarbage\n")  # damaged: ignored, not fatal
    again = LogManager(dirs, SEGMENT, log4j=logs)
    again.startup()
    assert sorted(again.all_logs()) == tps[:3]
    assert {tp: again.get_log(tp).log_start_offset for tp in tps[:3]} == starts
    assert all(again.get_log(tp).high_watermark == 20 for tp in tps[:3])
    assert not any((d / ".kafka_cleanshutdown").exists() for d in dirs)
    lines = server_log(logs)
    assert not any("Recovering unflushed segment" in line for line in lines)
    assert any(line.startswith(f"WARN Ignoring checkpoint file {dirs[0].resolve()}/replication-offset-checkpoint")
               for line in lines)
    again.close_without_checkpoint()


def test_log_manager_background_thread_runs_retention(tmp_path: Path) -> None:
    from broker.log import LogManagerConfig

    manager = LogManager([tmp_path / "d"], SEGMENT.with_overrides({"retention.bytes": "0"}),
                         LogManagerConfig(retention_check_interval_ms=50), log4j=new_log4j(tmp_path))
    manager.startup()
    log = manager.get_or_create_log(TP)
    for i in range(10):
        log.append_as_leader(batch(3, size=30, tag=i), 0)
    log.update_high_watermark(log.log_end_offset)
    manager.start()
    try:
        wait_until(lambda: log.log_start_offset > 0, 10, "the retention thread to delete a segment", interval=0.05)
    finally:
        manager.shutdown()
    assert log.log_start_offset == log.segments[0].base_offset > 0


def test_configs_from_server_properties_and_topic_overrides(tmp_path: Path) -> None:
    props = {"log.dirs": f"{tmp_path / 'a'}, {tmp_path / 'b'}", "log.segment.bytes": "2048", "log.roll.hours": "2",
             "log.retention.hours": "1", "log.retention.bytes": "99999", "message.max.bytes": "5000",
             "log.retention.check.interval.ms": "1000", "planewatch.leader.epoch.checkpoint.delay.ms": "300"}
    manager = LogManager.from_properties(props, log4j=new_log4j(tmp_path))
    assert manager.log_dirs == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    cfg = manager.default_config
    assert (cfg.segment_bytes, cfg.segment_ms, cfg.retention_ms, cfg.retention_bytes, cfg.max_message_bytes) == (
        2048, 7_200_000, 3_600_000, 99999, 5000)
    assert manager.manager_config.retention_check_interval_ms == 1000
    assert manager.epoch_checkpoint_delay.delay_ms == 300
    topic = cfg.with_overrides({"retention.ms": "-1", "message.timestamp.type": "LogAppendTime"})
    assert (topic.retention_ms, topic.message_timestamp_type, topic.segment_bytes) == (-1, "LogAppendTime", 2048)
    assert topic.to_topic_configs()["max.message.bytes"] == "5000"
    with pytest.raises(ValueError, match=r"Unknown topic config name: segment\.size"):
        cfg.with_overrides({"segment.size": "1"})
    with pytest.raises(ValueError, match=r"Invalid value abc for configuration segment\.bytes"):
        cfg.with_overrides({"segment.bytes": "abc"})
    with pytest.raises(ValueError, match="Value must be at least 14"):
        cfg.with_overrides({"segment.bytes": "3"})
    with pytest.raises(ValueError, match="String must be one of"):
        cfg.with_overrides({"message.timestamp.type": "Whenever"})


def test_log_manager_publishes_kafka_log_metrics(tmp_path: Path) -> None:
    from broker.metrics import MetricsRegistry

    registry = MetricsRegistry()
    manager = LogManager([tmp_path / "d"], SEGMENT, log4j=new_log4j(tmp_path), metrics=registry)
    manager.startup()
    log = manager.get_or_create_log(TopicPartition("m", 3))
    for i in range(12):
        log.append_as_leader(batch(3, size=30, tag=i), 0, durable=i == 11)
    prefix = "kafka.log:type=Log,name={},topic=m,partition=3"
    values = {n: registry.get(prefix.format(n)).attributes()["Value"]  # type: ignore[union-attr]
              for n in ("NumLogSegments", "LogStartOffset", "LogEndOffset", "Size")}
    assert values == {"NumLogSegments": len(log.segments), "LogStartOffset": 0, "LogEndOffset": 36,
                      "Size": log.size_bytes}
    assert values["NumLogSegments"] > 1
    flushes = registry.get("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs")
    assert flushes is not None
    assert flushes.attributes()["Count"] == 1
    manager.delete_log(TopicPartition("m", 3))
    assert registry.get(prefix.format("LogEndOffset")) is None
    manager.shutdown()


@pytest.mark.parametrize(("version", "expected"), [
    ("1.0", "INFO Incrementing log start offset of partition {tp} to 4 in dir {d} (kafka.log.Log)"),
    ("1.1", "INFO [Log partition={tp}, dir={d}] Incrementing log start offset to 4 (kafka.log.Log)"),
    ("2.6", "INFO [Log partition={tp}, dir={d}] Incremented log start offset to 4 due to leader offset increment "
            "(kafka.log.Log)"),
    ("3.5", "INFO [UnifiedLog partition={tp}, dir={d}] Incremented log start offset to 4 due to leader offset "
            "increment (kafka.log.UnifiedLog)"),
], ids=["1.0", "1.1", "2.6", "3.5"])
def test_log_start_offset_lines_of_each_kafka_era(tmp_path: Path, version: str, expected: str) -> None:
    from broker.log import LogManagerConfig

    logs = new_log4j(tmp_path)
    manager = LogManager([tmp_path / "d"], SEGMENT, LogManagerConfig.from_broker_properties(
        {"planewatch.log.line.version": version}), log4j=logs)
    manager.startup()
    log = manager.get_or_create_log(TP)
    log.append_as_leader(batch(9), 0)
    log.update_high_watermark(9)
    log.increment_log_start_offset(4, LogStartOffsetIncrementReason.LEADER_OFFSET_INCREMENTED)
    assert expected.format(tp=TP, d=(tmp_path / "d").resolve()) in server_log(logs)
    manager.shutdown()
    with pytest.raises(ValueError, match=r"planewatch\.log\.line\.version"):
        LogManagerConfig(log_line_version="2.0")
