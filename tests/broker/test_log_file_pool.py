"""The segment files' descriptor pool: bounded, leases and pins respected, deleted files never recreated, and
descriptors shed when the process runs out."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from broker.log.file_pool import FilePool
from broker.log.segment import LogSegment
from broker.protocol.batch import read_batch_header

from .data_plane_helpers import REPO
from .test_log_support import batch


def _fds_to(directory: Path) -> int:
    """This process's descriptors open on files under ``directory``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(directory)):
                count += 1
        except OSError:
            continue
    return count


def test_the_pool_holds_at_most_its_capacity_and_reopens_files_on_demand(tmp_path: Path) -> None:
    pool = FilePool(3)
    files = [pool.file(tmp_path / f"f{i}", create=True) for i in range(10)]
    for i, f in enumerate(files):
        f.pwrite(f"data-{i}".encode(), 0)
        assert pool.open_count <= 3
        assert _fds_to(tmp_path) <= 3
    assert [f.pread(16, 0) for f in files] == [f"data-{i}".encode() for i in range(10)]
    assert files[0].size() == len(b"data-0")
    assert sum(f.is_open for f in files) == pool.open_count == 3
    for f in files:
        f.close()
    assert pool.open_count == 0
    assert _fds_to(tmp_path) == 0
    with pytest.raises(OSError, match="is closed"):
        files[0].pread(1, 0)


def test_a_deleted_file_is_not_recreated_and_a_pinned_one_survives_its_unlink(tmp_path: Path) -> None:
    pool = FilePool(2)
    gone, kept = pool.file(tmp_path / "gone", create=True), pool.file(tmp_path / "kept", create=True)
    gone.pwrite(b"old", 0)
    kept.pwrite(b"still here", 0)
    kept.pin()
    (tmp_path / "gone").unlink()
    (tmp_path / "kept").unlink()
    others = [pool.file(tmp_path / f"o{i}", create=True) for i in range(4)]  # evict everything evictable
    assert not gone.is_open
    with pytest.raises(FileNotFoundError):
        gone.pread(3, 0)
    assert not (tmp_path / "gone").exists()
    assert kept.pread(10, 0) == b"still here"  # pinned: the descriptor outlived the unlink and the evictions
    kept.close()
    assert not kept.is_open
    # pinned descriptors are never evicted, so a pool whose every descriptor is pinned grows past its capacity
    for f in others:
        f.pin()
    assert pool.open_count == 4


def test_a_deleted_segment_stays_readable_until_closed_whatever_the_pool_evicts(tmp_path: Path) -> None:
    pool = FilePool(3)
    segment = LogSegment(tmp_path, 0, 4096, 10 * 1024 * 1024, 0, files=pool)
    records = batch(5)
    segment.append(records, [read_batch_header(records, 0)])
    segment.delete_files()
    assert not segment.log_path.exists()
    busy = []
    for i in range(3):  # three more segments: every idle descriptor of the pool is evicted
        (tmp_path / f"d{i}").mkdir()
        busy.append(LogSegment(tmp_path / f"d{i}", 0, 4096, 1024, 0, files=pool))
    assert segment.read(0, 1 << 20, segment.size, True) == records
    segment.close()
    for s in busy:
        s.close()
    assert pool.open_count == 0


def test_when_the_process_runs_out_of_descriptors_the_pool_sheds_its_idle_ones(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, resource
        from pathlib import Path
        from broker.log.file_pool import FilePool
        d = Path({str(tmp_path)!r})
        pool = FilePool(64)
        idle = [pool.file(d / f"idle{{i}}", create=True) for i in range(4)]
        used = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (used + 8, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        hogs = []
        try:
            while True:
                hogs.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        fresh = pool.file(d / "fresh", create=True)  # EMFILE at first: the idle four are closed, then it opens
        fresh.pwrite(b"ok", 0)
        print(fresh.pread(2, 0).decode(), sum(f.is_open for f in idle))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "0"]
