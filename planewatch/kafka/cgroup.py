"""A process starved of CPU the way a noisy neighbour or a throttled container starves it: every thread of it in a
cgroup whose CPU quota is a fraction of one core (cgroup v1 ``cpu.cfs_quota_us`` or v2 ``cpu.max``), for as long
as a ``with`` block runs. Needs a writable cgroup file system (root); :class:`CgroupUnavailable` says why not."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CgroupUnavailable", "cpu_quota"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
# the scheduler's accounting period the quota is a share of
PERIOD_US = 100_000


class CgroupUnavailable(RuntimeError):
    """No writable CPU controller here."""


def _controller() -> tuple[Path, str]:
    """(the directory new cgroups go in, "v1" | "v2")."""
    if (CGROUP_ROOT / "cpu" / "cpu.cfs_quota_us").exists():
        return CGROUP_ROOT / "cpu", "v1"
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "cpu" in (CGROUP_ROOT / "cgroup.controllers").read_text():
        return CGROUP_ROOT, "v2"
    raise CgroupUnavailable(f"no cgroup CPU controller under {CGROUP_ROOT}")


@contextmanager
def cpu_quota(pid: int, share: float, name: str) -> Iterator[Path]:
    """Every thread of `pid` limited to `share` of one CPU inside the block; moved back to the root cgroup after
    (also on error), and the cgroup removed."""
    parent, version = _controller()
    group = parent / name
    try:
        group.mkdir(exist_ok=True)
        quota = max(1000, round(share * PERIOD_US))
        if version == "v1":
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
    except OSError as e:
        raise CgroupUnavailable(f"cannot create a CPU-limited cgroup at {group}: {e}") from e
    # v1 moves threads one by one; v2 moves a whole process
    members = "tasks" if version == "v1" else "cgroup.procs"
    try:
        for tid in os.listdir(f"/proc/{pid}/task") if version == "v1" else [str(pid)]:
            (group / members).write_text(tid)
        yield group
    finally:
        root_members = parent / members
        for tid in (group / members).read_text().split():
            try:
                root_members.write_text(tid)
            except OSError:  # the thread ended meanwhile
                pass
        try:
            group.rmdir()
        except OSError:
            pass
