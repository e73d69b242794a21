"""A single-broker group coordinator: JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13).

Theory of operation
-------------------
Kafka's ``GroupCoordinator`` state machine, simplified to what a subscribing consumer needs:

``Empty`` --join--> ``PreparingRebalance`` --every known member joined (or rebalance timeout)--> ``CompletingRebalance``
--leader's SyncGroup--> ``Stable`` --join/leave/session expiry--> ``PreparingRebalance`` ...

* JoinGroup parks the request (on its handler thread, like the purgatory) until every member known before the
  rebalance has rejoined, or the largest ``rebalance_timeout_ms`` passed (members that did not rejoin are removed).
  Then the generation increments, the protocol every member supports is chosen (in the leader's preference order),
  the first member to join becomes leader and receives every member's metadata: the **client** leader computes the
  assignment (range, roundrobin, ...), as in Kafka.
* SyncGroup from the leader stores the assignments and makes the group Stable; followers' SyncGroup waits for it.
* Heartbeat answers REBALANCE_IN_PROGRESS while a rebalance is pending, so members rejoin.
* Sessions: a member whose last heartbeat is older than its ``session_timeout_ms`` is removed at the next group
  operation (lazily: no timer thread), which starts a rebalance.
* Member ids are ``<client_id>-<uuid>``; a JoinGroup with an empty member id gets one at once (no KIP-394
  MEMBER_ID_REQUIRED round trip). Static membership (``group.instance.id``) is treated as dynamic.

Waiting bounds: :data:`MAX_REBALANCE_WAIT_MS` caps any join/sync wait, so a handler thread is never held longer.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.apis.kafka_apis import HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.settings import GroupSettings

__all__ = ["MAX_REBALANCE_WAIT_MS", "GroupCoordinator"]

# The longest a join/sync waits on a handler thread (Kafka waits the whole rebalance timeout; clients retry a
# timed-out join, so a shorter cap only costs a retry).
MAX_REBALANCE_WAIT_MS = 60_000


@dataclass(slots=True)
class _Member:
    member_id: str
    client_id: str
    client_host: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_heartbeat: float
    joined: bool = False
    assignment: bytes = b""


@dataclass(slots=True)
class _Group:
    group_id: str
    state: str = "Empty"
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    rebalance_deadline: float = 0.0


class GroupCoordinator:
    """Group membership of one broker (thread-safe: one condition for all groups).

    Args:
        clock: monotonic seconds (injected for tests).
        offset_groups: the groups that only have committed offsets.
        settings: the session timeout bounds (``group.min/max.session.timeout.ms``; default: the table's).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 offset_groups: Callable[[], list[str]] = list, settings: GroupSettings | None = None) -> None:
        self.settings = settings or GroupSettings.defaults()
        self.offset_groups = offset_groups  # groups that only have committed offsets (ListGroups shows them)
        self._cond = threading.Condition()
        self._groups: dict[str, _Group] = {}
        self._clock = clock
        self._closed = False

    def close(self) -> None:
        """Wake every parked join/sync (broker shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------------------------------------- helpers
    def _expire(self, g: _Group) -> None:
        now = self._clock()
        waiting = g.state == "PreparingRebalance"  # members parked in JoinGroup are not expired (as Kafka)
        gone = [m for m in g.members.values()
                if now - m.last_heartbeat > m.session_timeout_ms / 1000 and not (waiting and m.joined)]
        for m in gone:
            del g.members[m.member_id]
        if gone:
            self._prepare(g)

    def _prepare(self, g: _Group) -> None:
        if not g.members:
            g.state, g.leader, g.protocol = "Empty", None, None
            g.generation += 1
            return
        if g.state != "PreparingRebalance":
            g.state = "PreparingRebalance"
            for m in g.members.values():
                m.joined = False
            timeout = max(m.rebalance_timeout_ms for m in g.members.values())
            g.rebalance_deadline = self._clock() + min(timeout, MAX_REBALANCE_WAIT_MS) / 1000
        self._cond.notify_all()

    def _maybe_complete_join(self, g: _Group) -> None:
        if g.state != "PreparingRebalance":
            return
        if not all(m.joined for m in g.members.values()) and self._clock() < g.rebalance_deadline:
            return
        for mid in [mid for mid, m in g.members.items() if not m.joined]:
            del g.members[mid]
        if not g.members:
            g.state, g.leader, g.protocol = "Empty", None, None
            g.generation += 1
            self._cond.notify_all()
            return
        g.generation += 1
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        leader = g.members[g.leader]
        common = set.intersection(*({n for n, _ in m.protocols} for m in g.members.values()))
        g.protocol = next((n for n, _ in leader.protocols if n in common), None)
        g.state = "CompletingRebalance"
        for m in g.members.values():
            m.assignment = b""
        self._cond.notify_all()

    def _wait(self, until: Callable[[], bool], deadline: float) -> bool:
        while not until():
            remaining = deadline - self._clock()
            if remaining <= 0 or self._closed:
                return until()
            self._cond.wait(min(remaining, 0.1))
        return True

    # ------------------------------------------------------------------------------------------- handlers
    def join_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """JoinGroup: add or refresh the member, wait for the rebalance to complete, answer the generation."""
        gid = str(body["group_id"])
        session = int(body["session_timeout_ms"])
        rebalance = int(body.get("rebalance_timeout_ms", session))
        protocols = [(str(p["name"]), bytes(p["metadata"])) for p in body["protocols"]]
        ptype = str(body["protocol_type"])

        nullable = header.api_version >= 7  # ProtocolName is a non-nullable string before v7

        def fail(code: int, member: str = "") -> HandlerResult:
            return HandlerResult({"throttle_time_ms": 0, "error_code": code, "generation_id": -1,
                                  "protocol_type": None, "protocol_name": None if nullable else "", "leader": "",
                                  "member_id": member, "members": []}, (code,))

        if not gid:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if not self.settings.min_session_timeout_ms <= session <= self.settings.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        with self._cond:
            g = self._groups.setdefault(gid, _Group(gid))
            self._expire(g)
            mid = str(body.get("member_id") or "")
            if mid and mid not in g.members:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID, mid)
            if g.members and g.protocol_type not in (None, ptype):
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid)
            if g.members and not set.intersection(
                    {n for n, _ in protocols}, *({n for n, _ in m.protocols} for m in g.members.values())):
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid)
            if not mid:
                mid = f"{header.client_id or 'member'}-{uuid.uuid4()}"
            old = g.members.get(mid)
            changed = old is None or old.protocols != protocols
            member = _Member(mid, header.client_id or "", request.client_host, protocols, session, rebalance,
                             self._clock())
            g.members[mid] = member
            g.protocol_type = ptype
            if g.leader is None:
                g.leader = mid
            del changed  # any join outside a rebalance starts one (Kafka: a leader/new member always does)
            if g.state != "PreparingRebalance":
                self._prepare(g)
            member.joined = True
            self._maybe_complete_join(g)
            deadline = self._clock() + min(rebalance, MAX_REBALANCE_WAIT_MS) / 1000

            def done() -> bool:
                self._maybe_complete_join(g)
                return g.state != "PreparingRebalance" or mid not in g.members

            if not self._wait(done, deadline) or mid not in g.members:
                return fail(ErrorCode.REBALANCE_IN_PROGRESS if mid in g.members else ErrorCode.UNKNOWN_MEMBER_ID, mid)
            members = []
            if mid == g.leader:
                members = [{"member_id": m.member_id, "group_instance_id": None,
                            "metadata": dict(m.protocols).get(g.protocol or "", b"")} for m in g.members.values()]
            member.last_heartbeat = self._clock()
            return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "generation_id": g.generation,
                                  "protocol_type": g.protocol_type,
                                  "protocol_name": g.protocol if g.protocol is not None or nullable else "",
                                  "leader": g.leader or "", "skip_assignment": False, "member_id": mid,
                                  "members": members}, (ErrorCode.NONE,))

    def sync_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """SyncGroup: the leader hands out assignments; everyone gets their own once the group is Stable."""
        del request, header
        gid, mid, gen = str(body["group_id"]), str(body["member_id"]), int(body["generation_id"])

        def answer(code: int, assignment: bytes = b"") -> HandlerResult:
            return HandlerResult({"throttle_time_ms": 0, "error_code": code, "protocol_type": None,
                                  "protocol_name": None, "assignment": assignment}, (code,))

        with self._cond:
            g = self._groups.get(gid)
            if g is None or mid not in g.members:
                return answer(ErrorCode.UNKNOWN_MEMBER_ID)
            if gen != g.generation:
                return answer(ErrorCode.ILLEGAL_GENERATION)
            if g.state == "PreparingRebalance":
                return answer(ErrorCode.REBALANCE_IN_PROGRESS)
            member = g.members[mid]
            member.last_heartbeat = self._clock()
            if mid == g.leader and g.state == "CompletingRebalance":
                given = {str(a["member_id"]): bytes(a["assignment"]) for a in body.get("assignments") or []}
                for m in g.members.values():
                    m.assignment = given.get(m.member_id, b"")
                g.state = "Stable"
                self._cond.notify_all()
            deadline = self._clock() + min(member.session_timeout_ms, MAX_REBALANCE_WAIT_MS) / 1000
            ok = self._wait(lambda: g.state != "CompletingRebalance" or g.generation != gen, deadline)
            if not ok or g.state != "Stable" or g.generation != gen or mid not in g.members:
                return answer(ErrorCode.REBALANCE_IN_PROGRESS)
            ans = answer(ErrorCode.NONE, g.members[mid].assignment)
            ans.body["protocol_type"], ans.body["protocol_name"] = g.protocol_type, g.protocol
            return ans

    def heartbeat(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Heartbeat: refresh the session; REBALANCE_IN_PROGRESS tells the member to rejoin."""
        del request, header
        gid, mid, gen = str(body["group_id"]), str(body["member_id"]), int(body["generation_id"])
        with self._cond:
            g = self._groups.get(gid)
            code = ErrorCode.NONE
            if g is not None:
                self._expire(g)  # first: a member whose session already ran out is gone
            if g is None or mid not in g.members:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                g.members[mid].last_heartbeat = self._clock()
                if g.state == "PreparingRebalance":
                    self._maybe_complete_join(g)
                if g.state in ("PreparingRebalance", "CompletingRebalance") or mid not in g.members:
                    code = ErrorCode.REBALANCE_IN_PROGRESS
                elif gen != g.generation:
                    code = ErrorCode.ILLEGAL_GENERATION
        return HandlerResult({"throttle_time_ms": 0, "error_code": code}, (code,))

    def leave_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """LeaveGroup: remove the member(s) (v3+: a list) and rebalance the rest."""
        del request
        gid = str(body["group_id"])
        ids = [str(m["member_id"]) for m in body.get("members") or []] if header.api_version >= 3 \
            else [str(body.get("member_id", ""))]
        results: list[dict[str, Any]] = []
        with self._cond:
            g = self._groups.get(gid)
            for mid in ids:
                code = ErrorCode.UNKNOWN_MEMBER_ID if g is None or mid not in g.members else ErrorCode.NONE
                if g is not None and code == ErrorCode.NONE:
                    del g.members[mid]
                    if g.leader == mid:
                        g.leader = next(iter(g.members), None)
                results.append({"member_id": mid, "group_instance_id": None, "error_code": code})
            if g is not None and any(r["error_code"] == ErrorCode.NONE for r in results):
                self._prepare(g)
        top = int(results[0]["error_code"]) if header.api_version < 3 and results else ErrorCode.NONE
        return HandlerResult({"throttle_time_ms": 0, "error_code": top, "members": results},
                             (top, *(int(r["error_code"]) for r in results)))

    def validate_commit(self, group: str, member: str, generation: int) -> int:
        """The error code of an OffsetCommit against group state (0 = store it)."""
        if generation < 0 and not member:
            return ErrorCode.NONE  # a simple (assign()) consumer
        with self._cond:
            g = self._groups.get(group)
            if g is None or member not in g.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if g.state == "PreparingRebalance":
                return ErrorCode.REBALANCE_IN_PROGRESS
            if generation != g.generation:
                return ErrorCode.ILLEGAL_GENERATION
            g.members[member].last_heartbeat = self._clock()
            return ErrorCode.NONE

    def describe_groups(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """DescribeGroups: state, protocol and members (with metadata and assignment) of each group; an unknown
        group is described as ``Dead`` with no members, as Kafka does."""
        del request, header
        out: list[dict[str, Any]] = []
        with self._cond:
            for gid in body.get("groups") or []:
                g = self._groups.get(str(gid))
                if g is not None:
                    self._expire(g)
                entry: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": gid,
                                         "group_state": "Dead" if g is None else g.state,
                                         "protocol_type": "" if g is None else g.protocol_type or "",
                                         "protocol_data": "" if g is None else g.protocol or "", "members": [],
                                         "authorized_operations": -2147483648}
                if g is not None:
                    entry["members"] = [{"member_id": m.member_id, "group_instance_id": None,
                                         "client_id": m.client_id, "client_host": m.client_host,
                                         "member_metadata": dict(m.protocols).get(g.protocol or "", b""),
                                         "member_assignment": m.assignment} for m in g.members.values()]
                out.append(entry)
        codes = tuple(ErrorCode.NONE for _ in out) or (ErrorCode.NONE,)
        return HandlerResult({"throttle_time_ms": 0, "groups": out}, codes)

    def list_groups(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """ListGroups: every group with members or committed offsets (``extra``), optionally filtered by state."""
        del request, header
        states = {str(x).lower() for x in body.get("states_filter") or []}
        with self._cond:
            known = {gid: (g.protocol_type or "", g.state) for gid, g in self._groups.items()}
        for gid in self.offset_groups():
            known.setdefault(gid, ("consumer", "Empty"))
        groups = [{"group_id": gid, "protocol_type": ptype, "group_state": state, "group_type": "classic"}
                  for gid, (ptype, state) in sorted(known.items()) if not states or state.lower() in states]
        return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": groups}, (ErrorCode.NONE,))

    def describe(self, group: str) -> dict[str, Any] | None:
        """State, generation and members of a group (for DescribeGroups and tests)."""
        with self._cond:
            g = self._groups.get(group)
            if g is None:
                return None
            return {"state": g.state, "generation": g.generation, "protocol": g.protocol, "leader": g.leader,
                    "members": sorted(g.members)}
