"""Telling that a (re)started Apache Kafka broker is up from its server.log, across log4j's hourly roll."""

from __future__ import annotations

from pathlib import Path

from planewatch.kafka.cluster import _logged_started

OLD = "[2026-11-27 10:59:01,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
NOISE = "[2026-11-27 10:59:58,000] INFO [KafkaServer id=1] starting (kafka.server.KafkaServer)\n"
NEW = "[2026-11-27 11:00:04,840] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"


def test_a_restart_across_the_hourly_roll_is_seen(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(OLD + "x" * 500 + "\n")
    offset, inode = log.stat().st_size, log.stat().st_ino  # the restart begins: its lines come after this
    assert not _logged_started(log, offset, inode)
    assert _logged_started(log, 0, inode)  # the first incarnation's start line is there, before the offset
    # log4j rolls at the hour: the old incarnation's lines and the restart's first ones move to server.log.<hour>
    log.rename(tmp_path / "server.log.2026-11-27-10")
    with open(tmp_path / "server.log.2026-11-27-10", "a") as fh:
        fh.write(NOISE)
    log.write_text(NOISE * 40)  # the new server.log already longer than the offset
    assert log.stat().st_size > offset
    assert not _logged_started(log, offset, inode)
    with open(log, "a") as fh:
        fh.write(NEW)
    assert _logged_started(log, offset, inode)


def test_a_start_line_rolled_away_past_the_offset_still_counts(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(OLD)
    offset, inode = log.stat().st_size, log.stat().st_ino
    with open(log, "a") as fh:
        fh.write(NOISE + NEW)
    log.rename(tmp_path / "server.log.2026-11-27-10")
    log.write_text("")
    assert _logged_started(log, offset, inode)
    assert not _logged_started(tmp_path / "missing.log", 0)


def test_a_first_start_reads_the_whole_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(NOISE + NEW)
    assert _logged_started(log, 0, 0)
