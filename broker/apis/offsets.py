"""Committed consumer offsets of one broker, persisted under the first log dir (a ``__consumer_offsets`` stand-in).

Kafka keeps committed offsets in the compacted ``__consumer_offsets`` topic; this broker keeps the same facts
(group, topic, partition -> offset, leader epoch, metadata) in one JSON file, ``<log.dir>/consumer-offsets.json``,
rewritten atomically (temp file, fsync, rename) on every commit that changes something, so an acknowledged commit
survives kill -9. Commits are rare next to produce traffic (librdkafka auto-commits every 5 s), so rewriting the
file is cheap enough; :data:`MAX_COMMITTED_ENTRIES` bounds it.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_COMMITTED_ENTRIES", "CommittedOffset", "OffsetStore"]

FILE_NAME = "consumer-offsets.json"
# Upper bound on stored (group, topic, partition) entries: a runaway client cannot grow the file without limit.
MAX_COMMITTED_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One committed offset."""

    offset: int
    leader_epoch: int
    metadata: str | None


class OffsetStore:
    """Committed offsets by group; thread-safe; persisted in ``directory``.

    A damaged file is renamed aside (``.corrupt``) and the broker starts with no offsets rather than failing.
    """

    def __init__(self, directory: Path) -> None:
        self._path = directory / FILE_NAME
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._load()

    def _load(self) -> None:
        if not self._path.exists():
            return
        try:
            raw = json.loads(self._path.read_text())
            for group, entries in raw.items():
                target = self._offsets.setdefault(str(group), {})
                for e in entries:
                    target[(str(e["topic"]), int(e["partition"]))] = CommittedOffset(
                        int(e["offset"]), int(e.get("leader_epoch", -1)), e.get("metadata"))
        except (ValueError, KeyError, TypeError, AttributeError):
            self._offsets = {}
            os.replace(self._path, self._path.with_suffix(".corrupt"))

    def get(self, group: str, topic: str, partition: int) -> CommittedOffset | None:
        """The committed offset, or None."""
        return self._offsets.get(group, {}).get((topic, partition))

    def group_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        """Every committed offset of ``group``."""
        return dict(self._offsets.get(group, {}))

    def groups(self) -> list[str]:
        """Groups with committed offsets."""
        return sorted(self._offsets)

    def commit(self, group: str, entries: dict[tuple[str, int], CommittedOffset]) -> bool:
        """Store and persist; False when the store is full (nothing stored)."""
        with self._lock:
            target = self._offsets.setdefault(group, {})
            size = sum(len(g) for g in self._offsets.values())
            new = sum(1 for k in entries if k not in target)
            if size + new > MAX_COMMITTED_ENTRIES:
                return False
            if all(target.get(k) == v for k, v in entries.items()):
                return True
            target.update(entries)
            self._persist()
            return True

    def delete_group(self, group: str) -> bool:
        """Forget every committed offset of ``group`` (persisted); whether it had any."""
        with self._lock:
            if self._offsets.pop(group, None) is None:
                return False
            self._persist()
            return True

    def _persist(self) -> None:
        data = {g: [{"topic": t, "partition": p, "offset": c.offset, "leader_epoch": c.leader_epoch,
                     "metadata": c.metadata} for (t, p), c in sorted(e.items())] for g, e in self._offsets.items()}
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path)
