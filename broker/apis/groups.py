"""FindCoordinator (10), OffsetCommit (8), OffsetFetch (9): what a consumer with a ``group.id`` needs to start;
DeleteGroups (42), which removes an empty group and its committed offsets.

Every broker coordinates the groups whose offsets it stores (no ``__consumer_offsets`` partitioning across brokers:
FindCoordinator answers this broker, on the listener the request came from; the internal topic itself is created
at the first group FindCoordinator, as Kafka does, so Metadata lists it). Offsets live in
:class:`broker.apis.offsets.OffsetStore`. Group membership (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) is in
:mod:`broker.apis.membership`; OffsetCommit from a member checks it there (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS), a commit with generation -1 (an ``assign()`` consumer) is stored while
the group has no members, as Kafka does for simple consumer groups. A partition the metadata does not know is
answered UNKNOWN_TOPIC_OR_PARTITION by OffsetCommit (any version) and OffsetFetch v0, as Kafka does; OffsetFetch
v1+ answers offset -1 for it, as Kafka does. A partition (or group) named more than once is handled and answered
once, the last occurrence's values winning (Kafka collects them in a map); DeleteGroups takes each group once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.apis.distinct import last_by_key
from broker.apis.kafka_apis import HandlerResult
from broker.apis.membership import GroupCoordinator
from broker.apis.offsets import CommittedOffset, OffsetStore
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.settings import GroupSettings
from broker.state import LiveBroker

__all__ = ["GroupApis", "coordinator_not_available"]

KEY_TYPE_GROUP = 0


def _coordinators(header: RequestHeader, body: dict[str, Any], answer: dict[str, Any]) -> HandlerResult:
    """The same FindCoordinator answer for every key (v4+: one per ``coordinator_keys``)."""
    if header.api_version >= 4:
        coords = [{"key": k, **answer} for k in body.get("coordinator_keys") or []]
        return HandlerResult({"throttle_time_ms": 0, "coordinators": coords},
                             tuple(c["error_code"] for c in coords) or (ErrorCode.NONE,))
    return HandlerResult({"throttle_time_ms": 0, **answer}, (answer["error_code"],))


def coordinator_not_available(header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """FindCoordinator's COORDINATOR_NOT_AVAILABLE (Kafka's answer while the coordinator's topic is not there yet)."""
    return _coordinators(header, body, {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                        "error_message": "The coordinator is not available.", "node_id": -1,
                                        "host": "", "port": -1})


class GroupApis:
    """The group-coordinator request handlers of one broker.

    Args:
        self_broker: this broker (FindCoordinator answers its endpoint on the request's listener).
        store: committed offsets.
        coordinator: group membership.
        settings: ``offset.metadata.max.bytes`` (default: the table's).
        partition_exists: whether the metadata knows a (topic, partition) (default: every one exists).
        on_group_lookup: called before a group FindCoordinator is answered (creates ``__consumer_offsets``).
    """

    def __init__(self, self_broker: LiveBroker, store: OffsetStore, coordinator: GroupCoordinator,
                 settings: GroupSettings | None = None, partition_exists: Callable[[str, int], bool] | None = None,
                 on_group_lookup: Callable[[], None] | None = None) -> None:
        self.self_broker = self_broker
        self.store = store
        self.coordinator = coordinator
        self.settings = settings or GroupSettings.defaults()
        self.partition_exists = partition_exists or (lambda _topic, _partition: True)
        self.on_group_lookup = on_group_lookup

    def find_coordinator(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """This broker, for groups; COORDINATOR_NOT_AVAILABLE for transactions (no transaction coordinator)."""
        ep = self.self_broker.endpoint(request.listener)
        key_type = int(body.get("key_type", KEY_TYPE_GROUP))
        if key_type == KEY_TYPE_GROUP and self.on_group_lookup is not None:
            self.on_group_lookup()
        if key_type != KEY_TYPE_GROUP or ep is None:
            return coordinator_not_available(header, body)
        # Kafka answers error.message(): "NONE" for no error (Errors.NONE has no exception to take it from)
        return _coordinators(header, body, {"error_code": ErrorCode.NONE, "error_message": "NONE",
                                            "node_id": self.self_broker.id, "host": ep.host, "port": ep.port})

    def offset_commit(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Store the offsets after the membership checks; per-partition error codes."""
        del request
        group = str(body["group_id"])
        generation = int(body.get("generation_id_or_member_epoch", -1))
        member = str(body.get("member_id", ""))
        instance = body.get("group_instance_id") if header.api_version >= 7 else None
        group_error: int = ErrorCode.NONE if group else ErrorCode.INVALID_GROUP_ID
        if not group_error:
            group_error = self.coordinator.validate_commit(group, member, generation, instance)
        entries: dict[tuple[str, int], CommittedOffset] = {}
        codes: list[int] = []
        by_topic: dict[str, list[dict[str, Any]]] = {}
        wanted = last_by_key(((str(t["name"]), int(p["partition_index"]), p)
                              for t in body["topics"] for p in t["partitions"]), lambda e: e[:2])
        for name, index, p in wanted.values():
            exists = self.partition_exists(name, index)
            code = group_error if exists else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            meta = p.get("committed_metadata")
            if not code and meta is not None and len(meta.encode()) > self.settings.offset_metadata_max_bytes:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            if not code:
                entries[(name, index)] = CommittedOffset(
                    int(p["committed_offset"]), int(p.get("committed_leader_epoch", -1)), meta)
            by_topic.setdefault(name, []).append({"partition_index": index, "error_code": code})
            codes.append(code)
        topics: list[dict[str, Any]] = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
        if entries and not self.store.commit(group, entries):
            for t in topics:
                for p in t["partitions"]:
                    if not p["error_code"]:
                        p["error_code"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
            codes = [p["error_code"] for t in topics for p in t["partitions"]]
        return HandlerResult({"throttle_time_ms": 0, "topics": topics}, tuple(codes) or (ErrorCode.NONE,))

    def _fetch_group(self, group: str, topics: list[dict[str, Any]] | None, index_key: str,
                     check_topics: bool = False) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if topics is None:  # all committed offsets of the group
            by_topic: dict[str, list[int]] = {}
            for (topic, partition) in sorted(self.store.group_offsets(group)):
                by_topic.setdefault(topic, []).append(partition)
            topics = [{"name": t, index_key: ps} for t, ps in by_topic.items()]
        wanted: dict[str, dict[int, None]] = {}  # topic -> partitions, each once (Kafka answers from a map)
        for t in topics:
            wanted.setdefault(str(t["name"]), {}).update(dict.fromkeys(int(i) for i in t[index_key]))
        for name, indexes in wanted.items():
            parts = []
            for idx in indexes:
                c = self.store.get(group, name, idx)
                unknown = check_topics and not self.partition_exists(name, idx)
                parts.append({"partition_index": idx, "committed_offset": c.offset if c and not unknown else -1,
                              "committed_leader_epoch": c.leader_epoch if c else -1,
                              "metadata": (c.metadata if c else "") or "",
                              "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if unknown else ErrorCode.NONE})
            out.append({"name": name, "partitions": parts})
        return out

    def offset_fetch(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Committed offsets (-1 where none), by group (v8+) or for the one group (v0-7)."""
        del request
        if header.api_version >= 8:
            groups = []
            for g in last_by_key(body.get("groups") or [], lambda g: str(g["group_id"])).values():
                groups.append({"group_id": g["group_id"], "error_code": ErrorCode.NONE,
                               "topics": self._fetch_group(str(g["group_id"]), g.get("topics"), "partition_indexes")})
            return HandlerResult({"throttle_time_ms": 0, "groups": groups}, (ErrorCode.NONE,))
        topics = self._fetch_group(str(body["group_id"]), body.get("topics"), "partition_indexes",
                                   check_topics=header.api_version == 0)
        return HandlerResult({"throttle_time_ms": 0, "topics": topics, "error_code": ErrorCode.NONE}, (ErrorCode.NONE,))

    def delete_groups(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Per group: NONE (an empty group and its committed offsets are gone), NON_EMPTY_GROUP (it has members),
        GROUP_ID_NOT_FOUND (neither members nor offsets), INVALID_GROUP_ID (an empty name), as Kafka answers."""
        del request, header
        results = []
        for gid in dict.fromkeys(body.get("groups_names") or []):  # Kafka: groupsNames.distinct
            code = (self.coordinator.delete_group(str(gid), self.store.delete_group) if gid
                    else ErrorCode.INVALID_GROUP_ID)
            results.append({"group_id": gid, "error_code": code})
        return HandlerResult({"throttle_time_ms": 0, "results": results},
                             tuple(int(r["error_code"]) for r in results) or (ErrorCode.NONE,))
