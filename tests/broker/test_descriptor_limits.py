"""Topic creation is all or nothing, and a broker with few file descriptors still starts and serves.

* a partition whose log cannot be created (a file in the way) rolls back the ones created before it (in-process);
* a broker whose open-file limit is used up by connections answers CreateTopics with an error, leaves no trace of
  the topic, keeps serving, and creates the topic after a restart (subprocess, limit lowered soft and hard);
* under a limit of 1024 descriptors a broker creates, and restarts with, 2000 idle partitions (subprocess);
* a broker raises its open-file soft limit to the hard limit at start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode
from tests.polling import wait_until

from .data_plane_helpers import BrokerProcess, Wire, broker, free_port
from .test_data_plane import FETCH_V, PRODUCE_V, batch, fetch_body, part, produce_body

# A limit the flood of connections below can use up in a fraction of a second.
SMALL_LIMIT = 256
# Connection attempts of the flood at most: the limit, plus room for what the kernel's backlog holds on to.
FLOOD_MAX = SMALL_LIMIT + 64
# The common default open-file limit, and twice as many idle partitions as it would allow three descriptors each.
COMMON_LIMIT = 1024
IDLE_PARTITIONS = 2000
_MD = {"allow_auto_topic_creation": False}


def _create(w: Wire, topic: str, partitions: int) -> dict[str, Any]:
    resp = w.call(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                                        "replication_factor": 1}], "timeout_ms": 30_000})
    return dict(resp["topics"][0])


def _partitions(w: Wire, topic: str) -> tuple[int, int]:
    """(error code, partitions) of ``topic`` in a Metadata answer."""
    (t,) = w.call(ApiKey.METADATA, 9, {"topics": [{"name": topic}], **_MD})["topics"]
    return int(t["error_code"]), len(t["partitions"])


def _dirs(data: Path, topic: str) -> list[str]:
    return sorted(p.name for p in data.iterdir() if p.name.startswith(f"{topic}-"))


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _pid(proc: BrokerProcess) -> int:
    assert proc.proc is not None
    return proc.proc.pid


@contextlib.contextmanager
def _running(tmp_path: Path, limit: int) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path, free_port(), open_files=limit)
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()


def _restart(proc: BrokerProcess) -> None:
    proc.kill(signal.SIGTERM)
    proc.start()


@pytest.mark.timeout(120)
def test_a_partition_that_cannot_be_created_rolls_back_the_topic(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        data = tmp_path / "data"
        (data / "roll-3").write_text("a file where partition 3's directory should go")
        failed = _create(w, "roll", 6)
        assert failed["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
        assert "roll-3" in failed["error_message"]
        assert _partitions(w, "roll") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
        assert _dirs(data, "roll") == ["roll-3"]  # partitions 0-2 were created, then removed again
        (data / "roll-3").unlink()
        assert _create(w, "roll", 6)["error_code"] == ErrorCode.NONE
        assert _partitions(w, "roll") == (ErrorCode.NONE, 6)
        # CreatePartitions is all or nothing too
        assert _create(w, "grow", 1)["error_code"] == ErrorCode.NONE
        (data / "grow-2").write_text("in the way")
        grown = w.call(ApiKey.CREATE_PARTITIONS, 2, {"topics": [{"name": "grow", "count": 4, "assignments": None}],
                                                     "timeout_ms": 5000, "validate_only": False})["results"]
        assert grown[0]["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
        assert _partitions(w, "grow") == (ErrorCode.NONE, 1)
        assert _dirs(data, "grow") == ["grow-0", "grow-2"]
        w.close()


def _flood(port: int, pid: int, limit: int) -> list[socket.socket]:
    """Connections until the broker holds ``limit`` descriptors (it can accept no more), plus a few the kernel keeps
    waiting in the backlog so any descriptor the broker frees is taken again at once."""
    held: list[socket.socket] = []
    extra = 0
    for _ in range(FLOOD_MAX):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            break
        if _fd_count(pid) >= limit:
            extra += 1
            if extra > 8:
                break
    wait_until(lambda: _fd_count(pid) >= limit, 10, "the broker to use up its descriptors", interval=0.05)
    return held


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(180)
def test_running_out_of_descriptors_answers_an_error_leaves_no_topic_and_the_broker_keeps_serving(
        tmp_path: Path) -> None:
    with _running(tmp_path, SMALL_LIMIT) as proc:
        pid, data = _pid(proc), tmp_path / "data"
        admin = Wire(proc.port)
        assert _partitions(admin, "big") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
        held = _flood(proc.port, pid, SMALL_LIMIT)
        try:
            failed = _create(admin, "big", 50)
            assert failed["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR, failed
            assert "Too many open files" in failed["error_message"]
            assert _partitions(admin, "big") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
            assert _dirs(data, "big") == []
        finally:
            for s in held:
                s.close()
        admin.close()

        def serves() -> bool:
            try:
                w = Wire(proc.port)
            except OSError:
                return False
            try:
                return int(w.call(ApiKey.API_VERSIONS, 0, {})["error_code"]) == ErrorCode.NONE
            finally:
                w.close()

        wait_until(serves, 30, "the broker to answer a new connection", interval=0.05)
        _restart(proc)
        w = Wire(proc.port)
        assert _create(w, "big", 10)["error_code"] == ErrorCode.NONE  # not TOPIC_ALREADY_EXISTS: nothing was left
        assert _partitions(w, "big") == (ErrorCode.NONE, 10)
        w.close()


def _soft_open_files(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as fh:
        for line in fh:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open-file limit")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_the_broker_raises_its_open_file_soft_limit_to_the_hard_limit(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path, free_port(), open_files=(SMALL_LIMIT, COMMON_LIMIT))
    proc.start()
    try:
        assert _soft_open_files(_pid(proc)) == COMMON_LIMIT
        server_log = (tmp_path / "logs" / "server.log").read_text()
        assert f"Raised the open-file soft limit from {SMALL_LIMIT} to its hard limit {COMMON_LIMIT}" in server_log
    finally:
        proc.kill()


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_broker_under_1024_descriptors_creates_and_restarts_with_2000_idle_partitions(tmp_path: Path) -> None:
    with _running(tmp_path, COMMON_LIMIT) as proc:
        w = Wire(proc.port)
        w.sock.settimeout(120)
        baseline = _fd_count(_pid(proc))
        assert _create(w, "idle", IDLE_PARTITIONS)["error_code"] == ErrorCode.NONE
        created = _fd_count(_pid(proc))
        w.close()
        _restart(proc)
        w = Wire(proc.port)
        assert _partitions(w, "idle") == (ErrorCode.NONE, IDLE_PARTITIONS)
        restarted = _fd_count(_pid(proc))
        for p in (0, IDLE_PARTITIONS // 2, IDLE_PARTITIONS - 1):  # still real logs: produce, then read back
            produced = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("idle", batch(3), partition=p)))
            assert produced["error_code"] == ErrorCode.NONE
            fetched = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("idle", 0, partition=p)), parts="partitions")
            assert fetched["high_watermark"] == 3
        w.close()
        print(f"\n{IDLE_PARTITIONS} partitions under {COMMON_LIMIT} descriptors: {baseline} before, {created} after "
              f"creating them, {restarted} after a restart "
              f"({(created - baseline) / IDLE_PARTITIONS:.2f} per partition, bounded by the pool)")
        assert created < COMMON_LIMIT
