"""kill -9 in the middle of a stream of durable (acks=all) appends: every acknowledged offset survives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.log import LogManager, TopicPartition
from broker.log._batch import validate_batches
from broker.log4j import Log4j
from tests.broker.test_log_support import new_log4j, server_log

REPO = Path(__file__).resolve().parents[2]
TP = TopicPartition("crash", 0)
# The child appends at most this many batches and runs at most this long; the parent kills it much earlier.
CHILD_MAX_BATCHES = 200_000
CHILD_MAX_SECONDS = 60
ACKS_BEFORE_KILL = 300
PARENT_TIMEOUT_S = 60

CHILD = f"""
import sys, time
from broker.log import LogConfig, LogManager, TopicPartition, build_batch
from broker.log4j import Log4j
manager = LogManager([sys.argv[1]], LogConfig(segment_bytes=20_000, index_interval_bytes=512), log4j=Log4j())
manager.startup()
log = manager.get_or_create_log(TopicPartition("crash", 0))
deadline = time.monotonic() + {CHILD_MAX_SECONDS}
for i in range({CHILD_MAX_BATCHES}):
    if time.monotonic() > deadline:
        break
    records = build_batch([(b"key-%d-%d" % (i, j), b"value-%d-%d" % (i, j) * 5) for j in range(1 + i % 4)])
    info = log.append_as_leader(records, 3, durable=True)
    print(i, info.first_offset, info.last_offset, flush=True)
"""


def _values(data: bytes) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in validate_batches(data, None)]


@pytest.mark.slow
def test_acknowledged_appends_survive_sigkill(tmp_path: Path) -> None:
    log_dir = tmp_path / "kafka-logs"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(log_dir)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    acked: list[tuple[int, int, int]] = []
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + PARENT_TIMEOUT_S
        while len(acked) < ACKS_BEFORE_KILL and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            i, first, last = map(int, line.split())
            acked.append((i, first, last))
        os.kill(child.pid, signal.SIGKILL)  # mid-append: the child never stops appending on its own
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        err = child.stderr.read() if child.stderr else ""
    assert len(acked) == ACKS_BEFORE_KILL, err

    logs = new_log4j(tmp_path)
    manager = LogManager([log_dir], log4j=logs)
    manager.startup()  # no clean-shutdown file: recovery runs
    try:
        log = manager.get_log(TP)
        assert log is not None
        last_acked = acked[-1][2]
        assert log.log_end_offset >= last_acked + 1
        batches: list[tuple[int, int]] = []
        while not batches or batches[-1][1] + 1 < log.log_end_offset:  # a read stays within one segment
            batches += _values(log.read(batches[-1][1] + 1 if batches else 0, 10**9).records)  # CRC-checked
        assert [b[0] for b in batches] == [0] + [b[1] + 1 for b in batches[:-1]]  # contiguous offsets
        assert batches[-1][1] + 1 == log.log_end_offset
        by_base = dict(batches)
        for i, first, last in acked:
            assert by_base[first] == last, i
            got = log.read(first, 1).records
            expected_key = b"key-%d-0" % i
            assert expected_key in got
            assert _values(got)[0] == (first, last)
        assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries()] == [(3, 0)]
        assert any(line.startswith("INFO Attempting recovery for all logs in ") for line in server_log(logs))
    finally:
        manager.shutdown()


def test_a_second_broker_cannot_open_a_locked_log_dir_until_the_first_dies(tmp_path: Path) -> None:
    log_dir = tmp_path / "kafka-logs"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom broker.log import LogManager\nfrom broker.log4j import Log4j\n"
         "m = LogManager([sys.argv[1]], log4j=Log4j()); m.startup(); print('up', flush=True); sys.stdin.read()",
         str(log_dir)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # the holder keeps the lock until we kill it (it blocks on stdin, never on a timer)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "up"
        from broker.log import LogDirInUseError

        with pytest.raises(LogDirInUseError):
            LogManager([log_dir], log4j=Log4j()).startup()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    manager = LogManager([log_dir], log4j=Log4j())
    manager.startup()  # the kernel dropped the dead process's flock
    manager.shutdown()
