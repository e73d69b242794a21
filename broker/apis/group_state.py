"""The state of one consumer group (Kafka's ``GroupMetadata`` / ``MemberMetadata``), without locks or waiting.

:mod:`broker.apis.membership` holds the coordinator's lock and parks requests; everything here is plain data and
the rules Kafka's ``GroupCoordinator`` (2.3+) applies to it:

* **members** by member id; **static members** (KIP-345, ``group.instance.id``) also by instance id: a static
  member that rejoins with no member id takes over its old member id's place (its assignment too);
* **pending members** (KIP-394): a dynamic member that joined with JoinGroup v4+ and no member id got one with
  MEMBER_ID_REQUIRED; a rebalance waits for it until it rejoins or its session runs out;
* :meth:`Group.validate_current_member`: FENCED_INSTANCE_ID for a request of a static member's old member id,
  UNKNOWN_MEMBER_ID for an id the group does not know (Kafka's ``validateCurrentMember``);
* :meth:`Group.commit_error`: which OffsetCommit Kafka refuses (``validateOffsetCommit`` plus the
  CompletingRebalance check): a commit while the group is preparing a rebalance is accepted.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from broker.protocol.error_codes import ErrorCode

__all__ = ["COMPLETING", "DEAD", "EMPTY", "PREPARING", "STABLE", "Group", "Member", "new_member_id"]

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"


def new_member_id(client_id: str, instance_id: str | None) -> str:
    """Kafka's ``generateMemberId``: ``<group.instance.id or client.id>-<uuid>``."""
    return f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"


@dataclass(slots=True)
class Member:
    """One member of a group."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_heartbeat: float
    joined: bool = False  # has (re)joined the rebalance in progress
    assignment: bytes = b""

    def metadata(self, protocol: str | None) -> bytes:
        """The member's metadata for ``protocol`` (empty when it has none)."""
        return dict(self.protocols).get(protocol or "", b"")


@dataclass(slots=True)
class Group:
    """One group's state; every method expects the coordinator's lock to be held."""

    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending: dict[str, float] = field(default_factory=dict)  # member id -> when its MEMBER_ID_REQUIRED expires
    rebalance_deadline: float = 0.0  # a rebalance completes by then, with whoever joined
    delay_until: float = 0.0  # group.initial.rebalance.delay.ms: an empty group's first rebalance waits until then

    # ---------------------------------------------------------------------------------------- membership
    def current_static_member(self, instance_id: str | None) -> str | None:
        """The member id that ``instance_id`` maps to (None: not a static member of this group)."""
        return self.static.get(instance_id) if instance_id is not None else None

    def validate_current_member(self, member_id: str, instance_id: str | None) -> int | None:
        """Kafka's ``validateCurrentMember``: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID or None (a current member)."""
        if instance_id is not None:
            current = self.static.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def add(self, member: Member) -> None:
        """Add a member (the first one leads)."""
        self.members[member.member_id] = member
        self.pending.pop(member.member_id, None)
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> None:
        """Remove a member; a new leader is the next member."""
        member = self.members.pop(member_id, None)
        if member is not None and member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)

    def replace_static(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """A static member rejoined with no member id: its member (assignment included) takes ``new_id``."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static[instance_id] = new_id
        if self.leader == old_id:
            self.leader = new_id
        return member

    # ---------------------------------------------------------------------------------------- protocols
    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        sets = [{n for n, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's ``supportsProtocols``: an empty group takes any type; otherwise the type matches and one of
        ``names`` is supported by every member."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & set(names))

    def select_protocol(self) -> str | None:
        """Kafka's ``selectProtocol``: each member votes for its most preferred candidate; the most votes win
        (ties: the leader's order)."""
        candidates = self.candidate_protocols()
        votes = Counter(next(n for n, _ in m.protocols if n in candidates) for m in self.members.values()
                        if candidates)
        if not votes:
            return None
        best = max(votes.values())
        leader = self.members.get(self.leader or "")
        order = [n for n, _ in leader.protocols] if leader is not None else sorted(votes)
        return next((n for n in order if votes.get(n) == best), max(votes, key=lambda n: votes[n]))

    # ---------------------------------------------------------------------------------------- offsets
    def commit_error(self, member_id: str, generation: int, instance_id: str | None) -> int:
        """The error code Kafka answers an OffsetCommit against this group with (NONE: store it)."""
        if self.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation >= 0 or member_id or instance_id is not None:
            error = self.validate_current_member(member_id, instance_id)
            if error is not None:
                return error
            if generation != self.generation:
                return ErrorCode.ILLEGAL_GENERATION
            if self.state == COMPLETING:
                return ErrorCode.REBALANCE_IN_PROGRESS
            return ErrorCode.NONE
        # a simple (assign()) consumer's commit: only while the group has no members
        return ErrorCode.UNKNOWN_MEMBER_ID if self.state != EMPTY else ErrorCode.NONE
