"""A hostile input tree without Spark: only regular files are opened; every other entry is skipped with a reason."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.sources.entries import NotRegularFile, entry_problem, open_regular
from jobs.sources.file_tail import Planned, plan, read_piece, split

L1 = "[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 (state.change.logger)"
# A walk that blocks on a FIFO never returns: the test gives it this long, then unblocks it and fails.
PLAN_TIMEOUT_S = 20.0
# Unix socket paths are limited to 108 bytes (sun_path).
SUN_PATH_MAX = 107


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for s in opened:
        s.close()


def _bounded(fn: Callable[[], Any], fifos: list[Path]) -> Any:
    """fn() in a thread; if it does not return in PLAN_TIMEOUT_S (blocked opening a FIFO), every FIFO gets a
    writer so it returns, and the test fails."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(PLAN_TIMEOUT_S)
    if t.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(PLAN_TIMEOUT_S)
        pytest.fail(f"blocked for {PLAN_TIMEOUT_S} s (a FIFO opened for reading?)")
    if errors:
        raise errors[0]
    return out[0]


def _hostile_tree(root: Path, sockets: list[socket.socket]) -> tuple[dict[str, str], list[Path]]:
    """Regular files plus every kind of hostile entry; returns {path: expected reason prefix} and the FIFOs."""
    b = root / "prod" / "broker-1"
    b.mkdir(parents=True)
    (b / "state-change.log").write_text(L1 + "\n")
    outside = root.parent / f"{root.name}-outside"
    outside.mkdir()
    (outside / "server.log").write_text(L1.replace("correlationId 17", "correlationId 18") + "\n")
    (b / "server.log").symlink_to(outside / "server.log")  # an operator's link to a regular file: read
    linked = root.parent / f"{root.name}-linked-dir"
    (linked / "broker-2").mkdir(parents=True)
    (linked / "broker-2" / "controller.log").write_text(L1 + "\n")
    (root / "linked").symlink_to(linked)  # an operator's link to a log directory: walked
    expected: dict[str, str] = {}
    loop = b / "kafka-request.log"
    loop.symlink_to(loop)
    expected[str(loop)] = "symlink loop"
    (b / "other-loop").symlink_to(b / "other-loop-2")
    (b / "other-loop-2").symlink_to(b / "other-loop")
    expected[str(b / "other-loop")] = "symlink loop"
    expected[str(b / "other-loop-2")] = "symlink loop"
    (b / "up").symlink_to(root)  # a directory loop
    expected[str(b / "up")] = "symlink loop"
    dangling = b / "controller.log.2021-03-02-08"
    dangling.symlink_to(b / "gone")
    expected[str(dangling)] = "dangling symlink"
    fifos = [b / "state-change.log.2021-03-02-09", b / "pipe"]  # a FIFO with a log's name, one with no name
    for fifo in fifos:
        os.mkfifo(fifo)
        expected[str(fifo)] = "FIFO"
    sock_path = b / "sock"
    if len(str(sock_path)) <= SUN_PATH_MAX:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sockets.append(s)
        s.bind(str(sock_path))
        expected[str(sock_path)] = "socket"
    try:
        os.mknod(b / "controller.log", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        expected[str(b / "controller.log")] = "character device"
    except PermissionError:
        pass  # no CAP_MKNOD here: the other entries still cover the walk
    return expected, fifos


def test_plan_skips_every_non_regular_entry_with_its_reason(tmp_path: Path, sockets: list[socket.socket]) -> None:
    root = tmp_path / "in"
    expected, fifos = _hostile_tree(root, sockets)
    planned: Planned = _bounded(lambda: plan(str(root), "logs", {}, 1 << 20), fifos)
    assert {e["path"] for e in planned.files.values()} == {
        str(root / "prod" / "broker-1" / "state-change.log"),
        str(root / "prod" / "broker-1" / "server.log"),
        str(root / "linked" / "broker-2" / "controller.log"),
    }
    assert set(planned.skipped) == set(expected)
    for path, prefix in expected.items():
        assert planned.skipped[path].startswith(prefix), (path, planned.skipped[path])
    assert planned.skipped_total == len(expected)
    rows = [r for p in split("logs", {}, planned.files) for b in read_piece(p) for r in b.to_pylist()]
    assert sorted(r["line"] for r in rows) == sorted([L1, L1, L1.replace("correlationId 17", "correlationId 18")])
    # metrics: the unnamed entries are reported by both families, named ones by their own only
    metrics = _bounded(lambda: plan(str(root), "metrics", {}, 1 << 20), fifos)
    assert metrics.files == {}
    unnamed = {p for p in expected if os.path.basename(p) in ("pipe", "sock", "other-loop", "other-loop-2", "up")}
    assert set(metrics.skipped) == unnamed


def test_open_regular_never_blocks_and_refuses_what_is_not_a_file(tmp_path: Path) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)

    def opened() -> str:
        with pytest.raises(NotRegularFile) as err:
            open_regular(str(fifo))
        return err.value.reason

    assert _bounded(opened, [fifo]).startswith("FIFO")
    with pytest.raises(NotRegularFile, match="directory"):
        open_regular(str(tmp_path))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(NotRegularFile, match="symlink loop"):
        open_regular(str(tmp_path / "loop"))
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    with pytest.raises(NotRegularFile, match="dangling symlink"):
        open_regular(str(tmp_path / "dangling"))
    with pytest.raises(FileNotFoundError):
        open_regular(str(tmp_path / "vanished"))
    (tmp_path / "f").write_bytes(b"x\n")
    with open_regular(str(tmp_path / "f")) as fh:
        assert fh.read() == b"x\n"
    assert entry_problem(str(tmp_path / "f")) is None
    with pytest.raises(FileNotFoundError):
        entry_problem(str(tmp_path / "vanished"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: the pipeline test drops the capability instead")
def test_unreadable_file_is_skipped(tmp_path: Path) -> None:
    f = tmp_path / "server.log"
    f.write_text(L1 + "\n")
    f.chmod(0)
    planned = plan(str(tmp_path), "logs", {}, 1 << 20)
    assert planned.files == {}
    assert planned.skipped == {str(f): "unreadable: Permission denied"}


def test_a_fifo_given_as_the_input_itself_is_skipped(tmp_path: Path) -> None:
    fifo = tmp_path / "state-change.log"
    os.mkfifo(fifo)
    planned = _bounded(lambda: plan(str(fifo), "logs", {}, 1 << 20), [fifo])
    assert planned.files == {}
    assert list(planned.skipped) == [str(fifo)]
