"""A single-broker group coordinator: JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13),
DescribeGroups (15), ListGroups (16) and the group side of DeleteGroups (42), as Kafka's ``GroupCoordinator`` (2.3+)
runs them.

Theory of operation
-------------------
``Empty`` --join--> ``PreparingRebalance`` --every member joined (or rebalance timeout)--> ``CompletingRebalance``
--leader's SyncGroup--> ``Stable`` --leader join / changed metadata / new member / leave / expiry-->
``PreparingRebalance`` ...

* JoinGroup parks the request (on its handler thread, like the purgatory) until every member known before the
  rebalance has rejoined and no member id handed out with MEMBER_ID_REQUIRED is still pending, or the largest
  ``rebalance_timeout_ms`` passed (members that did not rejoin are removed). An empty group's first rebalance also
  waits ``group.initial.rebalance.delay.ms``, extended by that much while new members keep joining, up to the
  rebalance timeout (Kafka's ``InitialDelayedJoin``). Then the generation increments, the protocol is chosen by
  the members' votes, and the leader receives every member's metadata: the **client** leader computes the
  assignment, as in Kafka.
* KIP-394: a dynamic member joining with JoinGroup v4+ and no member id gets one with MEMBER_ID_REQUIRED and must
  join again with it (it is *pending* meanwhile).
* KIP-345 static membership (``group.instance.id``): a static member joining with no member id is accepted at once;
  if its instance id is known, it takes over the old member (:meth:`Group.replace_static`): in a Stable group whose
  chosen protocol does not change, without a rebalance (it gets the current generation and, at SyncGroup, its old
  assignment), else the group rebalances. Any request still carrying the old member id is answered
  FENCED_INSTANCE_ID.
* A current member's JoinGroup in a Stable group rebalances only for the leader or changed metadata; a follower
  rejoining with the same metadata gets the current generation (Kafka's ``doCurrentMemberJoinGroup``).
* SyncGroup from the leader stores the assignments and makes the group Stable; followers' SyncGroup waits for it.
* Heartbeat answers REBALANCE_IN_PROGRESS while a rebalance is prepared, so members rejoin; while it completes a
  heartbeat keeps the member alive (NONE, as Kafka 3.9 answers).
* Sessions: a member whose last heartbeat is older than its ``session_timeout_ms`` is removed at the next group
  operation (lazily: no timer thread), which starts a rebalance.
* OffsetCommit checks (:meth:`GroupCoordinator.validate_commit`, rules in :meth:`Group.commit_error`): a member's
  commit is accepted while the group prepares a rebalance, refused with REBALANCE_IN_PROGRESS while it completes.

Waiting bounds: :data:`MAX_REBALANCE_WAIT_MS` caps any join/sync wait, so a handler thread is never held longer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from broker.apis.group_state import COMPLETING, EMPTY, PREPARING, STABLE, Group, Member, new_member_id
from broker.apis.kafka_apis import HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.settings import GroupSettings

__all__ = ["MAX_REBALANCE_WAIT_MS", "GroupCoordinator"]

# The longest a join/sync waits on a handler thread (Kafka waits the whole rebalance timeout; clients retry a
# timed-out join, so a shorter cap only costs a retry).
MAX_REBALANCE_WAIT_MS = 60_000
# How often a parked join/sync looks at the clock again (deadlines and the initial delay are clock-based).
WAIT_POLL_S = 0.1


class GroupCoordinator:
    """Group membership of one broker (thread-safe: one condition for all groups).

    Args:
        clock: monotonic seconds (injected for tests).
        offset_groups: the groups that only have committed offsets.
        settings: session timeout bounds and the initial rebalance delay (``group.*``); default: the table's,
            except no initial rebalance delay (a coordinator built without a broker configuration, in unit tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 offset_groups: Callable[[], list[str]] = list, settings: GroupSettings | None = None) -> None:
        self.settings = settings or replace(GroupSettings.defaults(), initial_rebalance_delay_ms=0)
        self.offset_groups = offset_groups  # groups that only have committed offsets (ListGroups shows them)
        self._cond = threading.Condition()
        self._groups: dict[str, Group] = {}
        self._clock = clock
        self._closed = False

    def close(self) -> None:
        """Wake every parked join/sync (broker shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------------------------------------- helpers
    def _expire(self, g: Group) -> None:
        now = self._clock()
        for mid in [mid for mid, until in g.pending.items() if now > until]:
            del g.pending[mid]
        waiting = g.state == PREPARING  # members parked in JoinGroup are not expired (as Kafka)
        gone = [m for m in g.members.values()
                if now - m.last_heartbeat > m.session_timeout_ms / 1000 and not (waiting and m.joined)]
        for m in gone:
            g.remove(m.member_id)
        if gone:
            self._prepare(g)

    def _prepare(self, g: Group) -> None:
        if not g.members:
            g.state, g.leader, g.protocol = EMPTY, None, None
            g.generation += 1
            return
        if g.state != PREPARING:
            now = self._clock()
            if g.state == EMPTY:
                g.delay_until = now + self.settings.initial_rebalance_delay_ms / 1000
            g.state = PREPARING
            for m in g.members.values():
                m.joined = False
            timeout = max(m.rebalance_timeout_ms for m in g.members.values())
            g.rebalance_deadline = now + min(timeout, MAX_REBALANCE_WAIT_MS) / 1000
        self._cond.notify_all()

    def _maybe_complete_join(self, g: Group) -> None:
        if g.state != PREPARING:
            return
        now = self._clock()
        ready = all(m.joined for m in g.members.values()) and not g.pending and now >= g.delay_until
        if not ready and now < g.rebalance_deadline:
            return
        for mid in [mid for mid, m in g.members.items() if not m.joined]:
            g.remove(mid)
        if not g.members:
            g.state, g.leader, g.protocol = EMPTY, None, None
            g.generation += 1
            self._cond.notify_all()
            return
        g.generation += 1
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.protocol = g.select_protocol()
        g.state = COMPLETING
        for m in g.members.values():
            m.assignment = b""
        self._cond.notify_all()

    def _wait(self, until: Callable[[], bool], deadline: float) -> bool:
        while not until():
            remaining = deadline - self._clock()
            if remaining <= 0 or self._closed:
                return until()
            self._cond.wait(min(remaining, WAIT_POLL_S))
        return True

    @staticmethod
    def _gone_error(g: Group, mid: str, instance: str | None) -> int:
        """Why ``mid`` is no longer a member: replaced by a newer static member, or removed."""
        current = g.current_static_member(instance)
        return ErrorCode.FENCED_INSTANCE_ID if current is not None and current != mid else ErrorCode.UNKNOWN_MEMBER_ID

    # ------------------------------------------------------------------------------------------- JoinGroup
    def join_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """JoinGroup: add, replace or refresh the member, wait for the rebalance when one is needed, answer the
        generation (see the module docstring)."""
        gid = str(body["group_id"])
        session = int(body["session_timeout_ms"])
        rebalance = int(body.get("rebalance_timeout_ms", session))
        protocols = [(str(p["name"]), bytes(p["metadata"])) for p in body["protocols"]]
        ptype = str(body["protocol_type"])
        instance = body.get("group_instance_id") if header.api_version >= 5 else None
        nullable = header.api_version >= 7  # ProtocolName is a non-nullable string before v7

        def fail(code: int, member: str = "") -> HandlerResult:
            return HandlerResult({"throttle_time_ms": 0, "error_code": code, "generation_id": -1,
                                  "protocol_type": None, "protocol_name": None if nullable else "", "leader": "",
                                  "member_id": member, "members": []}, (code,))

        def answer(g: Group, mid: str, leader: str | None, with_members: bool) -> HandlerResult:
            members = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                        "metadata": m.metadata(g.protocol)} for m in g.members.values()] if with_members else []
            return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "generation_id": g.generation,
                                  "protocol_type": g.protocol_type,
                                  "protocol_name": g.protocol if g.protocol is not None or nullable else "",
                                  "leader": leader or "", "skip_assignment": False, "member_id": mid,
                                  "members": members}, (ErrorCode.NONE,))

        if not gid:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if not self.settings.min_session_timeout_ms <= session <= self.settings.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        with self._cond:
            g = self._groups.setdefault(gid, Group(gid))
            self._expire(g)
            now = self._clock()
            mid = str(body.get("member_id") or "")
            if not g.supports(ptype, [n for n, _ in protocols]):
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid)
            if not g.members:
                g.protocol_type = ptype  # the first member sets the group's protocol type

            def fresh(member_id: str) -> Member:
                return Member(member_id, instance, header.client_id or "", request.client_host, protocols, session,
                              rebalance, now)

            if not mid:
                mid = new_member_id(header.client_id or "", instance)
                old = g.current_static_member(instance)
                if instance is not None and old is not None:
                    return self._rejoin_static(g, instance, old, mid, fresh(mid), answer, fail)
                if instance is None and header.api_version >= 4:
                    g.pending[mid] = now + session / 1000  # KIP-394: join again with this id
                    return fail(ErrorCode.MEMBER_ID_REQUIRED, mid)
                self._add_member(g, fresh(mid))
            elif mid in g.pending:
                self._add_member(g, fresh(mid))
            else:
                error = g.validate_current_member(mid, instance)
                if error is not None:
                    return fail(error, mid)
                member = g.members[mid]
                same = member.protocols == protocols
                member.protocols, member.session_timeout_ms, member.rebalance_timeout_ms = protocols, session, rebalance
                member.last_heartbeat = now
                if g.state == COMPLETING and same:  # the JoinGroup answer was lost: answer it again
                    return answer(g, mid, g.leader, mid == g.leader)
                if g.state == STABLE and same and mid != g.leader:
                    return answer(g, mid, g.leader, False)
                if g.state != PREPARING:
                    self._prepare(g)
            return self._await_join(g, mid, instance, rebalance, answer, fail)

    def _add_member(self, g: Group, member: Member) -> None:
        if g.state == PREPARING and self._clock() < g.delay_until:  # InitialDelayedJoin: a new member extends it
            g.delay_until = min(self._clock() + self.settings.initial_rebalance_delay_ms / 1000, g.rebalance_deadline)
        g.add(member)
        if g.state != PREPARING:
            self._prepare(g)

    def _rejoin_static(self, g: Group, instance: str, old: str, mid: str, joined: Member,
                       answer: Callable[[Group, str, str | None, bool], HandlerResult],
                       fail: Callable[[int, str], HandlerResult]) -> HandlerResult:
        leader = g.leader
        member = g.replace_static(instance, old, mid)
        member.protocols, member.client_id, member.client_host = joined.protocols, joined.client_id, joined.client_host
        member.session_timeout_ms, member.rebalance_timeout_ms = joined.session_timeout_ms, joined.rebalance_timeout_ms
        member.last_heartbeat = joined.last_heartbeat
        self._cond.notify_all()  # a join/sync parked with the old member id is fenced now
        if g.state == STABLE and g.select_protocol() == g.protocol:
            # KIP-345: no rebalance; the old leader id is returned so that a rejoining leader does not reassign
            return answer(g, mid, leader, False)
        if g.state != PREPARING:
            self._prepare(g)
        return self._await_join(g, mid, instance, joined.rebalance_timeout_ms, answer, fail)

    def _await_join(self, g: Group, mid: str, instance: str | None, rebalance: int,
                    answer: Callable[[Group, str, str | None, bool], HandlerResult],
                    fail: Callable[[int, str], HandlerResult]) -> HandlerResult:
        g.members[mid].joined = True
        self._maybe_complete_join(g)
        deadline = self._clock() + min(rebalance, MAX_REBALANCE_WAIT_MS) / 1000

        def done() -> bool:
            self._maybe_complete_join(g)
            return g.state != PREPARING or mid not in g.members

        if not self._wait(done, deadline) or mid not in g.members:
            return fail(ErrorCode.REBALANCE_IN_PROGRESS if mid in g.members else self._gone_error(g, mid, instance),
                        mid)
        g.members[mid].last_heartbeat = self._clock()
        return answer(g, mid, g.leader, mid == g.leader)

    # ------------------------------------------------------------------------------------------- Sync/Heartbeat/Leave
    def sync_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """SyncGroup: the leader hands out assignments; everyone gets their own once the group is Stable."""
        del request
        gid, mid, gen = str(body["group_id"]), str(body["member_id"]), int(body["generation_id"])
        instance = body.get("group_instance_id") if header.api_version >= 3 else None

        def answer(code: int, assignment: bytes = b"") -> HandlerResult:
            return HandlerResult({"throttle_time_ms": 0, "error_code": code, "protocol_type": None,
                                  "protocol_name": None, "assignment": assignment}, (code,))

        with self._cond:
            g = self._groups.get(gid)
            if g is None:
                return answer(ErrorCode.UNKNOWN_MEMBER_ID)
            error = g.validate_current_member(mid, instance)
            if error is not None:
                return answer(error)
            if gen != g.generation:
                return answer(ErrorCode.ILLEGAL_GENERATION)
            if g.state == PREPARING:
                return answer(ErrorCode.REBALANCE_IN_PROGRESS)
            member = g.members[mid]
            member.last_heartbeat = self._clock()
            if mid == g.leader and g.state == COMPLETING:
                given = {str(a["member_id"]): bytes(a["assignment"]) for a in body.get("assignments") or []}
                for m in g.members.values():
                    m.assignment = given.get(m.member_id, b"")
                g.state = STABLE
                self._cond.notify_all()
            deadline = self._clock() + min(member.session_timeout_ms, MAX_REBALANCE_WAIT_MS) / 1000
            ok = self._wait(lambda: g.state != COMPLETING or g.generation != gen, deadline)
            if mid not in g.members:
                return answer(self._gone_error(g, mid, instance))
            if not ok or g.state != STABLE or g.generation != gen:
                return answer(ErrorCode.REBALANCE_IN_PROGRESS)
            ans = answer(ErrorCode.NONE, g.members[mid].assignment)
            ans.body["protocol_type"], ans.body["protocol_name"] = g.protocol_type, g.protocol
            return ans

    def heartbeat(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Heartbeat: refresh the session; REBALANCE_IN_PROGRESS tells the member to rejoin."""
        del request
        gid, mid, gen = str(body["group_id"]), str(body["member_id"]), int(body["generation_id"])
        instance = body.get("group_instance_id") if header.api_version >= 3 else None
        with self._cond:
            g = self._groups.get(gid)
            code: int = ErrorCode.UNKNOWN_MEMBER_ID
            if g is not None:
                self._expire(g)  # first: a member whose session already ran out is gone
                code = g.validate_current_member(mid, instance) or ErrorCode.NONE
            if g is not None and code == ErrorCode.NONE:
                if g.state == EMPTY:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    g.members[mid].last_heartbeat = self._clock()
                    self._maybe_complete_join(g)
                    if g.state == PREPARING or mid not in g.members:
                        code = ErrorCode.REBALANCE_IN_PROGRESS
                    elif g.state == STABLE and gen != g.generation:
                        code = ErrorCode.ILLEGAL_GENERATION
        return HandlerResult({"throttle_time_ms": 0, "error_code": code}, (code,))

    def leave_group(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """LeaveGroup: remove the member(s) (v3+: a list; by ``group_instance_id`` alone too) and rebalance."""
        del request
        gid = str(body["group_id"])
        leaving: list[tuple[str, str | None]] = (
            [(str(m["member_id"]), m.get("group_instance_id")) for m in body.get("members") or []]
            if header.api_version >= 3 else [(str(body.get("member_id", "")), None)])
        results: list[dict[str, Any]] = []
        removed = False
        with self._cond:
            g = self._groups.get(gid)
            for mid, instance in leaving:
                code: int = ErrorCode.UNKNOWN_MEMBER_ID
                if g is not None and not mid:
                    current = g.current_static_member(instance)
                    if current is not None:
                        g.remove(current)
                        code, removed = ErrorCode.NONE, True
                elif g is not None and mid in g.pending:
                    del g.pending[mid]
                    code = ErrorCode.NONE
                elif g is not None:
                    code = g.validate_current_member(mid, instance) or ErrorCode.NONE
                    if code == ErrorCode.NONE:
                        g.remove(mid)
                        removed = True
                results.append({"member_id": mid, "group_instance_id": instance, "error_code": code})
            if g is not None and removed:
                self._prepare(g)
            elif g is not None:
                self._maybe_complete_join(g)  # a pending member left: the rebalance may be complete
        top = int(results[0]["error_code"]) if header.api_version < 3 and results else ErrorCode.NONE
        return HandlerResult({"throttle_time_ms": 0, "error_code": top, "members": results},
                             (top, *(int(r["error_code"]) for r in results)))

    # ------------------------------------------------------------------------------------------- offsets, admin
    def validate_commit(self, group: str, member: str, generation: int, instance: str | None = None) -> int:
        """The error code of an OffsetCommit against group state (0 = store it); see :meth:`Group.commit_error`.

        A group this coordinator does not know takes a simple consumer's commit (generation < 0) and refuses a
        member's with ILLEGAL_GENERATION, as Kafka's ``handleCommitOffsets`` does.
        """
        with self._cond:
            g = self._groups.get(group)
            if g is None:
                return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
            self._expire(g)
            code = g.commit_error(member, generation, instance)
            if code == ErrorCode.NONE and member in g.members:
                g.members[member].last_heartbeat = self._clock()
            return code

    def delete_group(self, group: str, delete_offsets: Callable[[str], bool]) -> int:
        """Kafka's ``handleDeleteGroups`` for one group: NON_EMPTY_GROUP while it has members; an empty group is
        removed and ``delete_offsets(group)`` forgets its offsets (NONE); GROUP_ID_NOT_FOUND for a group with
        neither members nor offsets. Its parked requests are not affected: an empty group has none."""
        with self._cond:
            g = self._groups.get(group)
            if g is not None:
                self._expire(g)
                if g.state != EMPTY:
                    return ErrorCode.NON_EMPTY_GROUP
                del self._groups[group]
                delete_offsets(group)
                return ErrorCode.NONE
            return ErrorCode.NONE if delete_offsets(group) else ErrorCode.GROUP_ID_NOT_FOUND

    def describe_groups(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """DescribeGroups: state, protocol and members (with metadata and assignment) of each group; an unknown
        group is described as ``Dead`` with no members, as Kafka does. A group named more than once is described
        once (Kafka repeats the description: members' metadata and assignments, once per occurrence)."""
        del request, header
        out: list[dict[str, Any]] = []
        with self._cond:
            for gid in dict.fromkeys(body.get("groups") or []):
                g = self._groups.get(str(gid))
                if g is not None:
                    self._expire(g)
                entry: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": gid,
                                         "group_state": "Dead" if g is None else g.state,
                                         "protocol_type": "" if g is None else g.protocol_type or "",
                                         "protocol_data": "" if g is None else g.protocol or "", "members": [],
                                         "authorized_operations": -2147483648}
                if g is not None:
                    entry["members"] = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                         "client_id": m.client_id, "client_host": m.client_host,
                                         "member_metadata": m.metadata(g.protocol),
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
                    "members": sorted(g.members),
                    "static": dict(sorted(g.static.items()))}
