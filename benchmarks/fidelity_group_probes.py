"""The fidelity probes of the group coordinator and the metadata details clients meet: KIP-394's MEMBER_ID_REQUIRED,
KIP-345 static members (a rejoin without a rebalance, the replaced member id fenced), OffsetCommit's membership
checks, OffsetCommit/OffsetFetch on a topic that does not exist, DeleteGroups, ``__consumer_offsets`` listed as
internal and refused to producers, illegal topic names, and a transactional id.

Each probe that needs a scene sets it with a script (:class:`benchmarks.fidelity_probes.Scratch`) on a group of its
own, so the probes do not depend on each other's order, except that the first one waits until the coordinator of
every probed group has loaded.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

from benchmarks.fidelity_probes import MISSING_TOPIC, PROBE_TIMEOUT_S, TOPIC, Probe, ProbeContext, Scratch
from benchmarks.fidelity_wire import record_batch

__all__ = ["group_probes"]

PRODUCE, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 0, 3, 8, 9, 10
JOIN_GROUP, HEARTBEAT, SYNC_GROUP, DESCRIBE_GROUPS, CREATE_TOPICS, INIT_PRODUCER_ID, DELETE_GROUPS = (
    11, 12, 14, 15, 19, 22, 42)
OFFSETS_TOPIC = "__consumer_offsets"
#: Session and rebalance timeouts of the probes' members: long enough that no member expires mid-probe.
SESSION_MS = 30_000
#: How long a script waits for a state it polls (a coordinator loading, a rebalance starting).
SCENE_WAIT_S = PROBE_TIMEOUT_S * 4
SCENE_POLL_S = 0.1
#: Names Kafka refuses (illegal characters, longer than 249, a name reserved for the current directory's parent).
ILLEGAL_TOPIC_NAMES = ("bad name!", "x" * 250, "..")


#: ConsumerProtocolSubscription v0 to the workload's topic (version, topics, null user data): Kafka 3.x parses a
#: consumer group's member metadata to compute its subscribed topics, and a join whose metadata does not parse never
#: completes there.
SUBSCRIPTION = (struct.pack(">hi", 0, 1) + struct.pack(">h", len(TOPIC.encode())) + TOPIC.encode()
                + struct.pack(">i", -1))


def _group(name: str) -> str:
    return f"fidelity-group-{name}"


#: Every group the probes use (each probe has its own).
GROUPS = tuple(_group(n) for n in ("kip394", "v3", "static-rejoin", "fenced", "simple-commit", "preparing",
                                   "unknown-topic", "never-seen", "delete-members", "delete-offsets", "deleted-fetch"))


def _join(group: str, version: int, member: str = "", instance: str | None = None) -> dict[str, Any]:
    return {"GroupId": group, "SessionTimeoutMs": SESSION_MS, "RebalanceTimeoutMs": SESSION_MS, "MemberId": member,
            "GroupInstanceId": instance, "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": SUBSCRIPTION}], "Reason": None}


def _commit(group: str, generation: int, member: str, instance: str | None, topic: str) -> dict[str, Any]:
    return {"GroupId": group, "GenerationIdOrMemberEpoch": generation, "MemberId": member,
            "GroupInstanceId": instance, "RetentionTimeMs": -1,
            "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5,
                                                       "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}


def _fetch(group: str, topic: str, version: int) -> dict[str, Any]:
    topics = [{"Name": topic, "PartitionIndexes": [0]}]
    if version >= 8:
        return {"Groups": [{"GroupId": group, "Topics": topics}], "RequireStable": False}
    return {"GroupId": group, "Topics": topics, "RequireStable": False}


def _poll(what: str, fn: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SCENE_WAIT_S
    while not fn():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the probe's scene: {what} did not happen within {SCENE_WAIT_S:.0f} s")
        time.sleep(SCENE_POLL_S)


def _static_member(s: Scratch, group: str, instance: str) -> tuple[str, int]:
    """A Stable group whose one member is static ``instance``: (its member id, the generation)."""
    joined = s.call(JOIN_GROUP, 5, _join(group, 5, instance=instance))
    if joined["ErrorCode"] != 0:
        raise RuntimeError(f"the probe's scene: JoinGroup answered {joined['ErrorCode']}")
    mid, gen = str(joined["MemberId"]), int(joined["GenerationId"])
    s.call(SYNC_GROUP, 3, {"GroupId": group, "GenerationId": gen, "MemberId": mid, "GroupInstanceId": instance,
                           "Assignments": [{"MemberId": mid, "Assignment": b"fidelity-assignment"}]})
    return mid, gen


# ------------------------------------------------------------------------------------------------------ scripts
def _replaced_static_member(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("fenced")
    old, gen = _static_member(s, group, "fenced-1")
    s.call(JOIN_GROUP, 5, _join(group, 5, instance="fenced-1"))  # the instance restarts: a new member id
    return {"GroupId": group, "GenerationId": gen, "MemberId": old, "GroupInstanceId": "fenced-1"}


def _static_rejoin(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("static-rejoin")
    _static_member(s, group, "rejoin-1")
    return _join(group, 5, instance="rejoin-1")


def _rejoin_facts(body: dict[str, Any]) -> dict[str, Any]:
    return {"generation": body.get("GenerationId"), "leader_is_the_new_id": body.get("Leader") == body.get("MemberId"),
            "members_listed": len(body.get("Members") or [])}


def _simple_commit_with_members(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("simple-commit")
    _static_member(s, group, "simple-1")
    return _commit(group, -1, "", None, TOPIC)


def _commit_while_preparing(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("preparing")
    mid, gen = _static_member(s, group, "preparing-1")
    s.send(JOIN_GROUP, 3, _join(group, 3))  # a new member: the group prepares a rebalance, the join is parked

    def preparing() -> bool:
        answer = s.call(DESCRIBE_GROUPS, 5, {"Groups": [group], "IncludeAuthorizedOperations": False})
        return bool(answer["Groups"][0]["GroupState"] == "PreparingRebalance")

    _poll("the group preparing a rebalance", preparing)
    return _commit(group, gen, mid, "preparing-1", TOPIC)


def _offsets_topic_listed(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    """Wait until the coordinator of every probed group has loaded (a group FindCoordinator creates
    ``__consumer_offsets``; Kafka answers COORDINATOR_NOT_AVAILABLE, then COORDINATOR_LOAD_IN_PROGRESS per partition
    until it has loaded), then list every topic."""
    for group in GROUPS:
        _poll(f"the coordinator of {group}", lambda g=group: s.call(  # type: ignore[misc]
            FIND_COORDINATOR, 3, {"Key": g, "KeyType": 0})["ErrorCode"] == 0)
        _poll(f"{group}'s coordinator loaded", lambda g=group: s.call(  # type: ignore[misc]
            DESCRIBE_GROUPS, 5, {"Groups": [g], "IncludeAuthorizedOperations": False})["Groups"][0]["ErrorCode"] == 0)
    return {"Topics": None, "AllowAutoTopicCreation": False}


def _offsets_topic_facts(body: dict[str, Any]) -> dict[str, Any]:
    topic = next((t for t in body.get("Topics", []) if t.get("Name") == OFFSETS_TOPIC), None)
    if topic is None:
        return {"listed": False}
    return {"listed": True, "is_internal": topic.get("IsInternal"), "error": topic.get("ErrorCode")}


def _create_topics_facts(body: dict[str, Any]) -> dict[str, Any]:
    return {str(t.get("Name"))[:20]: (t.get("ErrorCode"), t.get("ErrorMessage")) for t in body.get("Topics", [])}


def _delete_group_with_members(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("delete-members")
    _static_member(s, group, "delete-1")
    return {"GroupsNames": [group]}


def _delete_group_with_offsets(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("delete-offsets")
    s.call(OFFSET_COMMIT, 8, _commit(group, -1, "", None, TOPIC))
    return {"GroupsNames": [group]}


def _fetch_after_delete(_ctx: ProbeContext, s: Scratch) -> dict[str, Any]:
    group = _group("deleted-fetch")
    s.call(OFFSET_COMMIT, 8, _commit(group, -1, "", None, TOPIC))
    s.call(DELETE_GROUPS, 2, {"GroupsNames": [group]})
    return _fetch(group, TOPIC, 5)


def _fetch_unknown(version: int) -> Callable[[ProbeContext], dict[str, Any]]:
    return lambda _ctx: _fetch(_group("unknown-topic"), MISSING_TOPIC, version)


def _topics(*names: str) -> dict[str, Any]:
    return {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
                       for n in names], "timeoutMs": 5000, "ValidateOnly": False}


def _produce_internal(_ctx: ProbeContext) -> dict[str, Any]:
    batch = record_batch([b"fidelity-probe"], 1_700_000_000_000)
    return {"TransactionalId": None, "Acks": 1, "TimeoutMs": 5000,
            "TopicData": [{"Name": OFFSETS_TOPIC, "PartitionData": [{"Index": 0, "Records": batch}]}]}


def group_probes() -> list[Probe]:
    """The group and metadata probes, in the order sent."""
    return [
        Probe("Metadata v12 all topics lists __consumer_offsets internal", "PLAINTEXT", METADATA, 12,
              script=_offsets_topic_listed, facts_of=_offsets_topic_facts),
        Probe("JoinGroup v4 new member without a member id", "PLAINTEXT", JOIN_GROUP, 4,
              lambda _c: _join(_group("kip394"), 4)),
        Probe("JoinGroup v3 new member without a member id", "PLAINTEXT", JOIN_GROUP, 3,
              lambda _c: _join(_group("v3"), 3), facts=("GenerationId",)),
        Probe("JoinGroup v5 static member rejoins a Stable group", "PLAINTEXT", JOIN_GROUP, 5,
              script=_static_rejoin, facts_of=_rejoin_facts),
        Probe("Heartbeat v3 from a static member's replaced member id", "PLAINTEXT", HEARTBEAT, 3,
              script=_replaced_static_member),
        Probe("OffsetCommit v8 generation -1 from a non-member while the group has members", "PLAINTEXT",
              OFFSET_COMMIT, 8, script=_simple_commit_with_members),
        Probe("OffsetCommit v8 member commit while the group prepares a rebalance", "PLAINTEXT", OFFSET_COMMIT, 8,
              script=_commit_while_preparing),
        Probe("OffsetCommit v8 unknown topic", "PLAINTEXT", OFFSET_COMMIT, 8,
              lambda _c: _commit(_group("unknown-topic"), -1, "", None, MISSING_TOPIC)),
        Probe("OffsetCommit v2 unknown topic", "PLAINTEXT", OFFSET_COMMIT, 2,
              lambda _c: _commit(_group("unknown-topic"), -1, "", None, MISSING_TOPIC)),
        *(Probe(f"OffsetFetch v{v} unknown topic", "PLAINTEXT", OFFSET_FETCH, v, _fetch_unknown(v),
                facts=("CommittedOffset",)) for v in (0, 1, 5, 8)),
        Probe("DeleteGroups v2 unknown group", "PLAINTEXT", DELETE_GROUPS, 2,
              lambda _c: {"GroupsNames": [_group("never-seen")]}),
        Probe("DeleteGroups v2 group with members", "PLAINTEXT", DELETE_GROUPS, 2, script=_delete_group_with_members),
        Probe("DeleteGroups v1 group with committed offsets only", "PLAINTEXT", DELETE_GROUPS, 1,
              script=_delete_group_with_offsets),
        Probe("OffsetFetch v5 after DeleteGroups", "PLAINTEXT", OFFSET_FETCH, 5, script=_fetch_after_delete,
              facts=("CommittedOffset",)),
        Probe("Produce v9 to __consumer_offsets", "PLAINTEXT", PRODUCE, 9, _produce_internal),
        Probe("Metadata v12 illegal topic name", "PLAINTEXT", METADATA, 12, lambda _c: {
            "Topics": [{"Name": ILLEGAL_TOPIC_NAMES[0]}], "AllowAutoTopicCreation": False}, facts_of=lambda _b: {}),
        Probe("CreateTopics v7 illegal names", "PLAINTEXT", CREATE_TOPICS, 7, lambda _c: _topics(*ILLEGAL_TOPIC_NAMES),
              facts_of=_create_topics_facts),
        Probe("CreateTopics v7 __consumer_offsets", "PLAINTEXT", CREATE_TOPICS, 7, lambda _c: _topics(OFFSETS_TOPIC),
              facts_of=_create_topics_facts),
        Probe("InitProducerId v4 with a transactional id", "PLAINTEXT", INIT_PRODUCER_ID, 4, lambda _c: {
            "TransactionalId": "fidelity-tx", "TransactionTimeoutMs": 60_000, "ProducerId": -1, "ProducerEpoch": -1}),
    ]
