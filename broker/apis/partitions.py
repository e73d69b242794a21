"""CreatePartitions (37), ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

These are controller work. The handlers here translate the wire bodies to and from an :class:`AdminBackend`:

* :class:`LocalAdmin`, a standalone broker that is its own controller (a one-broker Kafka): CreatePartitions adds
  partitions led by this broker; ElectLeaders finds nothing to elect (the only replica leads: ELECTION_NOT_NEEDED,
  decided by the same rules as the cluster's controller, :mod:`broker.cluster.model`); a reassignment to this
  broker alone is complete at once, one naming another broker is INVALID_REPLICA_ASSIGNMENT, a cancellation
  NO_REASSIGNMENT_IN_PROGRESS; none is ever in progress;
* ``broker.cluster.http.ControllerClient`` on the reference cluster (registered by :mod:`broker.cluster.node`):
  the controller process elects, adds partitions and moves replicas.

ElectLeaders with null partitions means every partition and answers only those an election was needed for
(Kafka's ``handleElectLeaders``); v0 has no election type (preferred) and no top-level error code.

A partition named more than once is handled and answered once (a reassignment takes its last occurrence, as Kafka's
map does); a topic named twice in CreatePartitions is INVALID_REQUEST, answered once.
"""

from __future__ import annotations

from typing import Any, Protocol

from broker.apis.data_plane import DataPlane
from broker.apis.distinct import last_by_key, repeated
from broker.apis.kafka_apis import Handler, HandlerResult
from broker.cluster.model import NO_REASSIGNMENT, PartitionInfo, elect_preferred, elect_unclean, validate_reassignment
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.topic_partition import TopicPartition

__all__ = ["AdminBackend", "LocalAdmin", "admin_handlers"]

UNCLEAN_ELECTION = 1  # ElectionType.UNCLEAN; 0 (PREFERRED) is v0's only kind
_NO_PARTITION = "The partition does not exist."


class AdminBackend(Protocol):
    """Who carries out the controller work (the results are JSON-able dicts, as the cluster's HTTP channel)."""

    def create_partitions(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                      ) -> list[dict[str, Any]]: ...

    def alter_reassignments(self, moves: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def list_reassignments(self, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]: ...


class LocalAdmin:
    """The controller work of a standalone broker (see the module docstring)."""

    def __init__(self, dp: DataPlane) -> None:
        self.dp = dp

    def create_partitions(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Grow each topic; an explicit assignment must name this broker only."""
        out = []
        me = self.dp.state.broker_id
        for t in topics:
            assignments = t.get("assignments")
            code: int
            message: str | None
            if assignments is not None and any(list(a) != [me] for a in assignments):
                code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment must name this broker only."
            else:
                code, message = self.dp.add_partitions(t["name"], int(t["count"]),
                                                       validate_only=bool(t.get("validate_only")))
            out.append({"name": t["name"], "error_code": code, "error_message": message})
        return out

    def _info(self, topic: str, partition: int) -> PartitionInfo | None:
        ps = self.dp.state.partition(TopicPartition(topic, partition))
        if ps is None:
            return None
        return PartitionInfo(topic, partition, ps.replicas, ps.leader, ps.leader_epoch, ps.isr, ps.partition_epoch,
                             ps.controller_epoch)

    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """Nothing to elect where the only replica leads; unknown partitions answered as such."""
        if partitions is None:
            return []  # every partition is led by its preferred (only) replica: no election needed, none answered
        live = {self.dp.state.broker_id}
        out = []
        for topic, partition in partitions:
            info = self._info(topic, partition)
            if info is None:
                out.append({"topic": topic, "partition": partition,
                            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": _NO_PARTITION})
                continue
            if election_type == UNCLEAN_ELECTION:
                election, _ = elect_unclean(info, live, info.controller_epoch)
            else:
                election = elect_preferred(info, live, info.controller_epoch)
            message = "Leader election not needed for topic partition." if election.error else None
            out.append({"topic": topic, "partition": partition, "error_code": election.error,
                        "error_message": message})
        return out

    def alter_reassignments(self, moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A move to this broker alone is already done; anything else cannot be placed here."""
        live = {self.dp.state.broker_id}
        out = []
        for m in moves:
            answer = {"topic": m["topic"], "partition": m["partition"], "error_code": ErrorCode.NONE,
                      "error_message": None}
            if self._info(m["topic"], int(m["partition"])) is None:
                answer.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=_NO_PARTITION)
            elif m.get("replicas") is None:
                answer.update(error_code=ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, error_message=NO_REASSIGNMENT)
            elif (invalid := validate_reassignment([int(r) for r in m["replicas"]], live)) is not None:
                answer.update(error_code=invalid[0], error_message=invalid[1])
            out.append(answer)
        return out

    def list_reassignments(self, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """None is ever in progress."""
        del partitions
        return []


def _codes(codes: list[int]) -> tuple[int, ...]:
    return tuple(codes) or (ErrorCode.NONE,)


def _requested(topics: list[dict[str, Any]] | None, name_key: str,
               partitions_key: str) -> list[tuple[str, int]] | None:
    """The distinct partitions named, in the order they first appear (Kafka collects them in a set)."""
    if topics is None:
        return None
    return list(dict.fromkeys((str(t[name_key]), int(p)) for t in topics for p in t.get(partitions_key) or []))


def admin_handlers(backend: AdminBackend) -> dict[int, Handler]:
    """api_key -> handler for the four APIs, carried out by ``backend``."""

    def create_partitions(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request, header
        topics = body.get("topics") or []
        twice = repeated(t["name"] for t in topics)
        specs = [{"name": t["name"], "count": int(t["count"]), "validate_only": bool(body.get("validate_only")),
                  "assignments": None if t.get("assignments") is None else
                  [list(a["broker_ids"]) for a in t["assignments"]]}
                 for t in topics if t["name"] not in twice]
        done = {r["name"]: r for r in backend.create_partitions(specs)} if specs else {}
        results = [done.get(n) or {"name": n, "error_code": ErrorCode.INVALID_REQUEST,
                                   "error_message": "Duplicate topic in request."}
                   for n in dict.fromkeys(t["name"] for t in topics)]
        return HandlerResult({"throttle_time_ms": 0, "results": results},
                             _codes([int(r["error_code"]) for r in results]))

    def elect_leaders(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        election_type = int(body.get("election_type", 0)) if header.api_version >= 1 else 0
        results = backend.elect_leaders(election_type, _requested(body.get("topic_partitions"), "topic", "partitions"))
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for r in results:
            by_topic.setdefault(r["topic"], []).append({"partition_id": r["partition"], "error_code": r["error_code"],
                                                        "error_message": r.get("error_message")})
        return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": [
            {"topic": t, "partition_result": parts} for t, parts in by_topic.items()]},
            _codes([ErrorCode.NONE] + [int(r["error_code"]) for r in results]))

    def alter_reassignments(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request, header
        moves = list(last_by_key(
            ({"topic": t["name"], "partition": int(p["partition_index"]), "replicas": p.get("replicas")}
             for t in body.get("topics") or [] for p in t.get("partitions") or []),
            lambda m: (m["topic"], m["partition"])).values())
        by_topic: dict[str, list[dict[str, Any]]] = {}
        results = backend.alter_reassignments(moves) if moves else []
        for r in results:
            by_topic.setdefault(r["topic"], []).append({"partition_index": r["partition"],
                                                        "error_code": r["error_code"],
                                                        "error_message": r.get("error_message")})
        return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "",
                              "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]},
                             _codes([ErrorCode.NONE] + [int(r["error_code"]) for r in results]))

    def list_reassignments(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request, header
        results = backend.list_reassignments(_requested(body.get("topics"), "name", "partition_indexes"))
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for r in results:
            by_topic.setdefault(r["topic"], []).append({"partition_index": r["partition"], "replicas": r["replicas"],
                                                        "adding_replicas": r["adding"],
                                                        "removing_replicas": r["removing"]})
        return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "",
                              "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]},
                             (ErrorCode.NONE,))

    return {ApiKey.CREATE_PARTITIONS: create_partitions, ApiKey.ELECT_LEADERS: elect_leaders,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: list_reassignments}
