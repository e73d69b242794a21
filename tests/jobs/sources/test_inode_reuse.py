"""A scrape answer that reuses the inode of one read and deleted before is read whole, not from the old offset.

Scrape answers begin with the same `# HELP` lines, so the first bytes the offsets keep match; a landing zone that
prunes old answers while new ones arrive reuses inodes within a trigger (the soak quarantined the tails of such
answers as broken records)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jobs.sources.file_tail import _fingerprint, plan

HEADER = "# HELP kafka_network_requestchannel_requestqueuesize Size of the request queue\n"
SETTLED_S = 10.0


def _answer(path: Path, value: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"kafka_network_requestchannel_requestqueuesize {value}\n" * 3)


def _entry_as_read(path: Path, old_path: Path, size: int, mtime: float) -> dict[str, dict[str, object]]:
    """The offsets as they were after an earlier answer at the same inode, read to its end, was deleted."""
    st = os.stat(path)
    with open(path, "rb") as fh:
        fp = _fingerprint(fh)
    return {f"{st.st_dev}:{st.st_ino}": {"path": str(old_path), "offset": size, "size": size, "mtime": mtime,
                                         "deferred": False, "fp": fp, "from": 0, "cluster": "c1", "broker_id": 1,
                                         "kind": "prometheus"}}


def test_a_new_answer_at_a_reused_inode_is_read_from_its_start(tmp_path: Path) -> None:
    new = tmp_path / "c1" / "broker-1" / "metrics" / "scrape-2.prom"
    _answer(new, 500.0)
    start = _entry_as_read(new, new.with_name("scrape-1.prom"), len(HEADER) + 10, time.time() - 60)
    (entry,) = plan(str(tmp_path), "metrics", start, 1 << 20, now=time.time() + SETTLED_S).files.values()
    assert (entry["from"], entry["offset"]) == (0, new.stat().st_size)


def test_an_answer_at_the_same_name_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    same = tmp_path / "c1" / "broker-1" / "metrics" / "kafka.prom"
    _answer(same, 7.0)
    start = _entry_as_read(same, same, len(HEADER) + 10, same.stat().st_mtime - 30)
    (entry,) = plan(str(tmp_path), "metrics", start, 1 << 20, now=time.time() + SETTLED_S).files.values()
    assert entry["from"] == 0


def test_the_answer_read_is_not_read_again(tmp_path: Path) -> None:
    done = tmp_path / "c1" / "broker-1" / "metrics" / "scrape-1.prom"
    _answer(done, 1.0)
    size = done.stat().st_size
    start = _entry_as_read(done, done, size, done.stat().st_mtime)
    (entry,) = plan(str(tmp_path), "metrics", start, 1 << 20, now=time.time() + SETTLED_S).files.values()
    assert (entry["from"], entry["offset"]) == (size, size)
