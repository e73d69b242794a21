"""The reference broker's durable partition log (Kafka's ``kafka.log`` package, simplified where it does not matter).

Theory of operation
-------------------
Layout, as in Kafka::

    <log.dir>/
        .lock                               flock'ed while a broker uses the dir
        .kafka_cleanshutdown                present only between a clean shutdown and the next start
        recovery-point-offset-checkpoint    per partition: every offset below it is fsynced
        log-start-offset-checkpoint         per partition: log start offsets above the first segment's base
        replication-offset-checkpoint       per partition: high watermarks
        <topic>-<partition>/
            00000000000000000000.log        record batches v2, byte for byte as produced (offsets patched)
            00000000000000000000.index      sparse: relative offset -> position, one per index.interval.bytes
            00000000000000000000.timeindex  sparse: max timestamp so far -> offset
            00000000000000012345.log ...    the next segment starts at its base offset
            leader-epoch-checkpoint         epoch -> start offset

**Appends** (:meth:`Log.append_as_leader`) validate every batch (lengths, magic 2, CRC-32C, ``max.message.bytes``)
before taking the log lock, then patch each batch's BaseOffset and PartitionLeaderEpoch in place (both outside
the CRC), roll the active segment when ``segment.bytes``/``segment.ms``/a full index demand it, and write the
bytes with one ``pwrite``. Followers (:meth:`Log.append_as_follower`) keep the leader's offsets and epochs.

**Reads** (:meth:`Log.read`) locate the batch holding the fetch offset with the sparse index (a bisect, then a
header walk of at most one index interval) and return whole batches from it: ``b""`` when there is nothing,
never None; the first batch even above ``max_bytes``; nothing at or above ``max_offset`` (the high watermark).

**Durability** (the documented choice): the log never fsyncs on its own unless ``flush.messages``/``flush.ms``
say so (Kafka's defaults: never, replication is the durability). The Produce handler passes ``durable=True`` for
acks=all, so an acknowledged acks=all record is on disk before the answer is sent: a kill -9 loses none of
them. acks=0/1 records reach the disk at the next flush (page cache survives a process crash, not a power
loss). Concurrent durable appends share fsyncs (group commit, see :meth:`Log.flush`).

**Recovery** (:mod:`broker.log._loader`): without ``.kafka_cleanshutdown``, every segment from the recovery
point on is re-validated batch by batch; a partial, garbled or zero-filled tail is cut back to the last whole
valid batch and the indexes are rebuilt, with Kafka's server.log lines.

**Retention** (:meth:`Log.delete_old_segments`, run by :class:`LogManager`) deletes whole old segments beyond
``retention.ms`` or ``retention.bytes`` (never data at or above the high watermark) and moves the log start
offset; every move is logged as ``[Log partition=t-0, dir=/d] Incremented log start offset to N due to R``
(logger ``kafka.log.Log``), followed by the leader epoch cache's ``Cleared earliest ...`` line.

**Leader epoch checkpoint**: written through on every epoch change (temp file, fsync, rename) under the log
lock, as Kafka before 3.7 does; :class:`CheckpointDelay` (``planewatch.leader.epoch.checkpoint.delay.ms``) slows
that fsync on purpose for the KAFKA-6974 scenario.

How the broker uses it (one :class:`LogManager` per broker; call :meth:`LogManager.startup` first)::

    manager = LogManager.from_properties(server_properties, log4j=..., metrics=...)
    manager.startup()                      # lock dirs, load + recover every partition
    manager.start()                        # retention / flush.ms / checkpoints thread
    log = manager.get_or_create_log(TopicPartition(topic, partition))
    # Produce (leader):   info = log.append_as_leader(records, leader_epoch, durable=(acks == -1))
    #                     log.update_high_watermark(log.log_end_offset)   # ISR = {self}
    # Fetch (consumer):   log.read(offset, partition_max_bytes, max_offset=log.high_watermark, min_one_batch=first)
    # Fetch (follower):   log.read(offset, partition_max_bytes)            # up to the log end offset
    # ListOffsets:        log.offset_for_timestamp(ts, max_offset=log.high_watermark)   # -2 earliest, -1 latest
    # Replica fetcher:    log.append_as_follower(records); log.update_high_watermark(leader_hw);
    #                     log.increment_log_start_offset(leader_lso, LEADER_OFFSET_INCREMENTED); log.truncate_to(o)
    manager.shutdown()                     # flush, checkpoints, .kafka_cleanshutdown

Errors are :class:`LogError` subclasses carrying Kafka's error code (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR): bad input never corrupts the log.

Modules: `config` (Log configuration); `epoch_cache` (The leader epoch cache (`LeaderEpochFileCache`)); `errors`
(The log package's exception hierarchy); `file_pool` (A bounded pool of open descriptors for the segment files
(`.log`, `.index`,...); `results` (Value types of the log's public API).
"""

from __future__ import annotations

from ._batch import build_batch
from .checkpoint import CheckpointDelay, TopicPartition
from .config import LogConfig, LogManagerConfig
from .epoch_cache import EpochEntry, LeaderEpochCache
from .errors import (
    CorruptRecordError,
    LogDirInUseError,
    LogError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from .log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, AppendInfo, FetchData, Log, LogStartOffsetIncrementReason
from .manager import LogManager, validate_topic_name

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "AppendInfo",
    "CheckpointDelay",
    "CorruptRecordError",
    "EpochEntry",
    "FetchData",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogDirInUseError",
    "LogError",
    "LogManager",
    "LogManagerConfig",
    "LogStartOffsetIncrementReason",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "TopicPartition",
    "UnexpectedAppendOffsetError",
    "build_batch",
    "validate_topic_name",
]
