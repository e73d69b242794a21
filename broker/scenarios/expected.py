"""What each scenario run injects and which alert must catch it (pure data; `planewatch demo` scores against it).

A run is one cluster (its directory name under the pipeline's input, so the alert's ``cluster``). An incident is
marked by the timeline event named ``event`` (its ``occurrence``-th, by default the first); ``alert_type`` must then
fire on that run's cluster, on broker ``broker_id``: a fixed id, the name of the timeline event's field that holds
it, or None for any broker of the run.
``FORBIDDEN`` lists, per run, the alert types that would be false alarms there ("*": every type).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANY", "EXPECTED", "FORBIDDEN", "RUNS", "ExpectedIncident"]

# FORBIDDEN wildcard: no alert of any type may fire on the run.
ANY = "*"


@dataclass(frozen=True)
class ExpectedIncident:
    """One injected incident: the run, its marker event, the alert type and broker that must catch it, and the
    cause (schemas.alerts.IncidentCause) the incident of that alert must be put down to, where the run states one."""

    run: str
    event: str
    alert_type: str
    broker_id: int | str | None  # fixed id, timeline field holding it, or None = any broker of the run
    occurrence: int = 1  # which occurrence of `event` marks the incident (a scenario may repeat a step)
    cause: str | None = None


RUNS = (
    "healthy",
    "produce-backlog-without-control-plane",
    "produce-backlog-with-control-plane",
    "connection-storm",
    "fetcher-lock-locked",
    "fetcher-lock-async",
    "broker-bounce",
    "controller-failover",
)

EXPECTED: tuple[ExpectedIncident, ...] = (
    # KIP-291 without a control plane: the LeaderAndIsr that moves leadership off the killed broker 3 waits behind
    # the produce backlog in the shared request queue of the surviving brokers (1 and 2, whichever it reaches).
    ExpectedIncident("produce-backlog-without-control-plane", "broker-killed", "CONTROL_REQUEST_QUEUED_BEHIND_DATA",
                     None),
    ExpectedIncident("produce-backlog-without-control-plane", "broker-killed", "DELAYED_LEADER_AND_ISR", None),
    # ... and so does the UpdateMetadata that follows it; the produce backlog itself saturates the request handlers
    ExpectedIncident("produce-backlog-without-control-plane", "broker-killed", "DELAYED_UPDATE_METADATA", None),
    ExpectedIncident("produce-backlog-without-control-plane", "load-started", "REQUEST_HANDLER_SATURATED", None),
    # with the control plane the data plane is just as saturated (only control requests are spared)
    ExpectedIncident("produce-backlog-with-control-plane", "load-started", "REQUEST_HANDLER_SATURATED", None),
    # KIP-402: thousands of connections against broker 1 block its acceptor.
    ExpectedIncident("connection-storm", "storm-started", "ACCEPTOR_BLOCKED", "broker", cause="CONNECTION_STORM"),
    # KAFKA-6974: the second bounce (broker 2) moves leadership onto broker 3, restarted by the first bounce and
    # still catching up: its fetchers hold partitionMapLock over responses full of slow checkpoint flushes, and the
    # LeaderAndIsr that removes their partitions waits for it. The first bounce finds fetchers in steady state
    # (small responses, waits under a second). Measured on 2026-11-27: the contended LeaderAndIsr started 1.8-1.9 s
    # after the second restart in two runs, 8-10 s after the first.
    ExpectedIncident("fetcher-lock-locked", "broker-restarted", "LOCK_CONTENTION", None, occurrence=2),
    # A LeaderAndIsr carrying broker 2's pre-restart epoch is fenced (STALE_BROKER_EPOCH, error 77).
    ExpectedIncident("broker-bounce", "stale-request-sent", "STALE_BROKER_EPOCH", "broker"),
)

# A condition two inputs witness is two alert types (schemas.alerts): the log's and the metrics'.
_QUEUED_BEHIND_DATA = ("CONTROL_REQUEST_QUEUED_BEHIND_DATA", "CONTROL_REQUEST_QUEUE_DELAY")
_SLOW_LEADER_AND_ISR = ("DELAYED_LEADER_AND_ISR", "LEADER_AND_ISR_TOTAL_TIME_HIGH")

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "healthy": (ANY,),
    # the dedicated control plane keeps control requests out of the data backlog
    "produce-backlog-with-control-plane": (*_QUEUED_BEHIND_DATA, *_SLOW_LEADER_AND_ISR, "DELAYED_UPDATE_METADATA",
                                           "LEADER_AND_ISR_NOT_COMPLETED", "CONTROL_PLANE_QUEUE_BACKLOG",
                                           "LOCK_CONTENTION", "STALE_BROKER_EPOCH"),
    # one broker with a control plane: only the PLAINTEXT listener's acceptor and network threads may suffer
    "connection-storm": ("LEADER_AND_ISR_NOT_COMPLETED", *_SLOW_LEADER_AND_ISR, "LOCK_CONTENTION",
                         "STALE_BROKER_EPOCH", *_QUEUED_BEHIND_DATA, "DELAYED_UPDATE_METADATA"),
    # the fixed model: the same restarts and slow checkpoints, no LeaderAndIsr waits on a fetcher lock (the
    # restarts themselves may fence a stale-epoch request: STALE_BROKER_EPOCH is not forbidden; DELAYED_* are left
    # open as a restarted broker catching up on 2 busy cores may answer late, though clean runs show none)
    "fetcher-lock-async": ("LOCK_CONTENTION", "LEADER_AND_ISR_NOT_COMPLETED", *_QUEUED_BEHIND_DATA),
    "fetcher-lock-locked": ("LEADER_AND_ISR_NOT_COMPLETED", *_QUEUED_BEHIND_DATA),
    "broker-bounce": ("LEADER_AND_ISR_NOT_COMPLETED", "LOCK_CONTENTION", *_SLOW_LEADER_AND_ISR,
                      "DELAYED_UPDATE_METADATA", *_QUEUED_BEHIND_DATA),
    # a controller failover under load is handled by the cluster (brokers re-register, requests of the dead
    # controller are superseded): nothing an operator must act on
    "controller-failover": (ANY,),
    "produce-backlog-without-control-plane": ("LOCK_CONTENTION", "STALE_BROKER_EPOCH"),
}
