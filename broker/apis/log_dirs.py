"""DescribeLogDirs (35) and AlterReplicaLogDirs (34): the broker's log directories, as Kafka's ``ReplicaManager``
answers them.

DescribeLogDirs: one result per configured log dir (``log.dirs``), each listing the requested partitions (null: every
partition) whose log lives there: size in bytes, offset lag ``max(high watermark - log end offset, 0)`` (Kafka's
``getLogEndOffsetLag`` for a current, not future, replica), never a future replica; v3+ a top-level error code,
v4+ the file system's total and usable bytes.

AlterReplicaLogDirs, per partition (``ReplicaManager.alterReplicaLogDirs``): a path that is not a configured log dir
is LOG_DIR_NOT_FOUND; a partition this broker does not host is REPLICA_NOT_AVAILABLE; a partition already in the
requested dir is NONE (nothing to move, which with one log dir is every hosted partition). A move to another of
several log dirs would need a future replica copied by an alter-log-dirs thread, which this broker does not run:
it answers KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.topic_partition import TopicPartition

__all__ = ["handle_alter_replica_log_dirs", "handle_describe_log_dirs"]

_UNKNOWN_BYTES = -1  # DescribeLogDirs v4's TotalBytes/UsableBytes when the file system cannot tell


def _disk(path: Path) -> tuple[int, int]:
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return _UNKNOWN_BYTES, _UNKNOWN_BYTES
    return usage.total, usage.free


def handle_describe_log_dirs(dp: DataPlane, request: Request, header: RequestHeader,
                             body: dict[str, Any]) -> HandlerResult:
    """Every log dir with the requested partitions stored in it."""
    del request
    wanted: set[TopicPartition] | None = None
    if body.get("topics") is not None:
        wanted = {TopicPartition(str(t["topic"]), int(p)) for t in body["topics"] for p in t.get("partitions") or []}
    results = []
    for log_dir in dp.logs.log_dirs:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for log in sorted(dp.logs.logs_in(log_dir), key=lambda lg: (lg.topic_partition.topic,
                                                                    lg.topic_partition.partition)):
            tp = log.topic_partition
            if wanted is not None and tp not in wanted:
                continue
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "partition_size": log.size_bytes,
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0), "is_future_key": False})
        total, usable = _disk(log_dir)
        results.append({"error_code": ErrorCode.NONE, "log_dir": str(log_dir), "total_bytes": total,
                        "usable_bytes": usable,
                        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]})
    del header
    return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results},
                         (ErrorCode.NONE,) * (1 + len(results)))


def _alter_one(dp: DataPlane, tp: TopicPartition, path: str) -> int:
    dirs = {str(d): d for d in dp.logs.log_dirs}
    if path not in dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    log = dp.logs.get_log(tp)
    if dp.state.partition(tp) is None or log is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    return ErrorCode.NONE if log.dir.parent == dirs[path] else ErrorCode.KAFKA_STORAGE_ERROR


def handle_alter_replica_log_dirs(dp: DataPlane, request: Request, header: RequestHeader,
                                  body: dict[str, Any]) -> HandlerResult:
    """Keep each replica where it is when that is the requested dir (see the module docstring)."""
    del request, header
    by_topic: dict[str, list[dict[str, Any]]] = {}
    codes: list[int] = []
    for d in body.get("dirs") or []:
        for t in d.get("topics") or []:
            for p in t.get("partitions") or []:
                code = _alter_one(dp, TopicPartition(str(t["name"]), int(p)), str(d["path"]))
                by_topic.setdefault(str(t["name"]), []).append({"partition_index": int(p), "error_code": code})
                codes.append(code)
    results = [{"topic_name": name, "partitions": parts} for name, parts in by_topic.items()]
    return HandlerResult({"throttle_time_ms": 0, "results": results}, tuple(codes) or (ErrorCode.NONE,))
