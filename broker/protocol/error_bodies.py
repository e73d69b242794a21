"""Error bodies per API: the shapes of Kafka's ``AbstractRequest.getErrorResponse`` implementations.

Top-level ``error_code`` fields always carry the error.  APIs whose answer is per topic/partition
(Metadata, Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, LeaderAndIsr, StopReplica, CreateTopics, DeleteTopics,
OffsetCommit, OffsetFetch, FindCoordinator v4+, DescribeGroups, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs) mirror the request's topics/partitions with that error, when the
decoded request is available; otherwise their lists are empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from .api_keys import ApiKey

_ZERO = uuid.UUID(int=0)

__all__ = ["error_body"]

_Builder = Callable[[int, int, dict[str, Any]], dict[str, Any]]


def _metadata(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    topics = req.get("topics") or []
    return {
        "topics": [
            {"error_code": code, "name": t.get("name"), "topic_id": t.get("topic_id") or _ZERO, "partitions": []}
            for t in topics
        ]
    }


def _produce(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "responses": [
            {
                "name": t.get("name", ""),
                "partition_responses": [
                    {
                        "index": p.get("index", 0),
                        "error_code": code,
                        "base_offset": -1,
                        "log_append_time_ms": -1,
                        "log_start_offset": -1,
                    }
                    for p in t.get("partition_data", [])
                ],
            }
            for t in req.get("topic_data", [])
        ]
    }


def _fetch(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "error_code": code,
        "responses": [
            {
                "topic": t.get("topic", ""),
                "topic_id": t.get("topic_id") or _ZERO,
                "partitions": [
                    {
                        "partition_index": p.get("partition", 0),
                        "error_code": code,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "records": b"",
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in req.get("topics", [])
        ],
    }


def _list_offsets(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {
                        "partition_index": p.get("partition_index", 0),
                        "error_code": code,
                        "timestamp": -1,
                        "offset": -1,
                        "leader_epoch": -1,
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in req.get("topics", [])
        ]
    }


def _leader_and_isr(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    if version >= 5:
        topics = [
            {
                "topic_id": t.get("topic_id") or _ZERO,
                "partition_errors": [
                    {"partition_index": p.get("partition_index", 0), "error_code": code}
                    for p in t.get("partition_states", [])
                ],
            }
            for t in req.get("topic_states", [])
        ]
        return {"error_code": code, "topics": topics}
    if version >= 2:
        states = [
            (t.get("topic_name", ""), p) for t in req.get("topic_states", []) for p in t.get("partition_states", [])
        ]
    else:
        states = [(p.get("topic_name", ""), p) for p in req.get("ungrouped_partition_states", [])]
    errors = [{"topic_name": n, "partition_index": p.get("partition_index", 0), "error_code": code} for n, p in states]
    return {"error_code": code, "partition_errors": errors}


def _stop_replica(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    if version >= 3:
        parts = [
            (t.get("topic_name", ""), p.get("partition_index", 0))
            for t in req.get("topic_states", [])
            for p in t.get("partition_states", [])
        ]
    elif version >= 1:
        parts = [(t.get("name", ""), i) for t in req.get("topics", []) for i in t.get("partition_indexes", [])]
    else:
        parts = [(p.get("topic_name", ""), p.get("partition_index", 0)) for p in req.get("ungrouped_partitions", [])]
    return {
        "error_code": code,
        "partition_errors": [{"topic_name": n, "partition_index": i, "error_code": code} for n, i in parts],
    }


def _create_topics(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {"name": t.get("name", ""), "error_code": code, "num_partitions": -1, "replication_factor": -1}
            for t in req.get("topics", [])
        ]
    }


def _delete_topics(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    names = list(req.get("topic_names", [])) or [t.get("name") for t in req.get("topics", [])]
    return {"responses": [{"name": n, "error_code": code} for n in names]}


def _offset_commit(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {"partition_index": p.get("partition_index", 0), "error_code": code}
                    for p in t.get("partitions", [])
                ],
            }
            for t in req.get("topics", [])
        ]
    }


def _find_coordinator(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"error_code": code, "node_id": -1, "host": "", "port": -1}
    if version >= 4:
        body["coordinators"] = [
            {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code}
            for k in req.get("coordinator_keys", [])
        ]
    return body


def _offset_fetch(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    if version >= 8:
        return {"groups": [{"group_id": g.get("group_id", ""), "error_code": code} for g in req.get("groups", [])]}
    topics = [
        {
            "name": t.get("name", ""),
            "partitions": [
                {
                    "partition_index": i,
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": code,
                }
                for i in t.get("partition_indexes", [])
            ],
        }
        for t in (req.get("topics") or [])
    ]
    return {"error_code": code, "topics": topics}


def _join_group(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": code, "generation_id": -1, "protocol_name": "", "leader": "", "member_id": ""}


def _init_producer_id(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": code, "producer_id": -1, "producer_epoch": -1}


def _describe_groups(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {"groups": [{"error_code": code, "group_id": g} for g in req.get("groups", [])]}


def _describe_configs(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "results": [
            {
                "error_code": code,
                "error_message": None,
                "resource_type": r.get("resource_type", 0),
                "resource_name": r.get("resource_name", ""),
                "configs": [],
            }
            for r in req.get("resources", [])
        ]
    }


def _alter_configs(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "responses": [
            {
                "error_code": code,
                "error_message": None,
                "resource_type": r.get("resource_type", 0),
                "resource_name": r.get("resource_name", ""),
            }
            for r in req.get("resources", [])
        ]
    }


def _offset_for_leader_epoch(version: int, code: int, req: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {
                "topic": t.get("topic", ""),
                "partitions": [
                    {"error_code": code, "partition": p.get("partition", 0), "leader_epoch": -1, "end_offset": -1}
                    for p in t.get("partitions", [])
                ],
            }
            for t in req.get("topics", [])
        ]
    }


_BUILDERS: dict[int, _Builder] = {
    ApiKey.METADATA: _metadata,
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.LEADER_AND_ISR: _leader_and_isr,
    ApiKey.STOP_REPLICA: _stop_replica,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.JOIN_GROUP: _join_group,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
}


def error_body(api_key: int, version: int, error_code: int, request: dict[str, Any] | None) -> dict[str, Any]:
    """The response body answering ``request`` (may be None) with ``error_code``."""
    builder = _BUILDERS.get(api_key)
    body: dict[str, Any] = builder(version, error_code, request or {}) if builder else {}
    body.setdefault("error_code", error_code)
    body.setdefault("throttle_time_ms", 0)
    return body
