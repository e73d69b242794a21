"""Kafka's checkpoint files: a version line, a count line, then one entry per line, replaced atomically.

``CheckpointFile.write`` (Kafka ``server/checkpoints/CheckpointFile.scala``) writes ``<file>.tmp``, flushes and
fsyncs it, renames it over the file (``Utils.atomicMoveWithFallback``) and fsyncs the directory, so a crash at
any point leaves either the old or the new content, never a torn file. Formats (version 0)::

    recovery-point-offset-checkpoint / log-start-offset-checkpoint / replication-offset-checkpoint:
        0\\n<count>\\n<topic> <partition> <offset>\\n...
    <topic>-<partition>/leader-epoch-checkpoint:
        0\\n<count>\\n<epoch> <start offset>\\n...
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from broker.topic_partition import TopicPartition

from .errors import StorageError

__all__ = [
    "CURRENT_VERSION",
    "CheckpointDelay",
    "TopicPartition",
    "fsync_dir",
    "read_checkpoint",
    "read_offsets_checkpoint",
    "write_checkpoint",
    "write_offsets_checkpoint",
]

CURRENT_VERSION = 0


class CheckpointDelay:
    """A mutable fault-injection delay applied before each leader-epoch-checkpoint fsync (0 = none).

    Shared by every log of a :class:`~broker.log.manager.LogManager`, so a scenario can slow the disk at runtime.
    """

    def __init__(self, delay_ms: int = 0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.delay_ms = delay_ms
        self._sleep = sleep

    def apply(self) -> None:
        """Sleep for the configured delay, if any."""
        if self.delay_ms > 0:
            self._sleep(self.delay_ms / 1000.0)


def write_checkpoint(path: Path, lines: Iterable[str], *, before_fsync: Callable[[], None] | None = None) -> None:
    """Atomically replace ``path`` with the version line, the count and ``lines`` (temp + fsync + rename).

    Raises:
        StorageError: the directory is not writable.
    """
    entries = list(lines)
    text = f"{CURRENT_VERSION}\n{len(entries)}\n" + "".join(f"{line}\n" for line in entries)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if before_fsync is not None:
                before_fsync()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise StorageError(f"Error while writing to checkpoint file {path}: {exc}") from exc


def read_checkpoint(path: Path) -> list[list[str]]:
    """The entries of a checkpoint file, split on whitespace; ``[]`` when the file does not exist.

    Raises:
        StorageError: malformed content (Kafka: "Malformed line in checkpoint file").
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Error while reading checkpoint file {path}: {exc}") from exc
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(CURRENT_VERSION) or not lines[1].strip().isdigit():
        raise StorageError(f"Malformed header in checkpoint file {path}")
    expected = int(lines[1])
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != expected:
        raise StorageError(f"Expected {expected} entries in checkpoint file ({path}), but found only {len(entries)}")
    return entries


def write_offsets_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Write a ``topic partition offset`` checkpoint (recovery points, log start offsets, high watermarks)."""
    write_checkpoint(path, (f"{tp.topic} {tp.partition} {off}" for tp, off in sorted(offsets.items())))


def read_offsets_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Read a ``topic partition offset`` checkpoint; ``{}`` when missing.

    Raises:
        StorageError: malformed content.
    """
    out: dict[TopicPartition, int] = {}
    for entry in read_checkpoint(path):
        if len(entry) != 3 or not entry[1].isdigit():
            raise StorageError(f"Malformed line in checkpoint file ({path}): {' '.join(entry)}")
        try:
            out[TopicPartition(entry[0], int(entry[1]))] = int(entry[2])
        except ValueError:
            raise StorageError(f"Malformed line in checkpoint file ({path}): {' '.join(entry)}") from None
    return out


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so file creations, renames and deletions in it survive a power loss.

    Raises:
        StorageError: the directory cannot be opened or synced.
    """
    try:
        _sync_dir(directory)
    except OSError as exc:
        raise StorageError(f"Error while flushing directory {directory}: {exc}") from exc


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
