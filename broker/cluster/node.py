"""A broker as a member of the reference cluster: ``python -m broker.cluster.node --config FILE``.

It is ``planewatch broker`` with a different apis factory (:func:`cluster_apis_factory`), which adds to the standard
KafkaApis + data plane:

* registration with the controller (``planewatch.controller.url``) before any request is served; the answer is the
  broker epoch (``BrokerState.set_broker_epoch``), then a heartbeat thread keeps the session (a broker whose
  heartbeat is refused as stale re-registers: a bounce the controller sees by the new epoch);
* replica fetchers (:mod:`broker.fetcher`, ``replica.fetcher.model=locked|async``) as ReplicaManager's fetcher hook;
* CreateTopics forwarded to the controller with its configs (replicated topics; the controller validates the configs,
  assigns replicas and elects leaders), also ``__consumer_offsets`` at the first group FindCoordinator, as a Kafka
  broker creates it; so are CreatePartitions, ElectLeaders and the partition reassignments
  (:mod:`broker.apis.partitions`);
* topic configs kept equal to the controller's (:mod:`broker.cluster.topic_config_sync`): fetched before
  registering, on a newer config version in a heartbeat answer and before a LeaderAndIsr creates logs; an
  AlterConfigs / IncrementalAlterConfigs received here is validated here and stored at the controller, so
  DescribeConfigs answers the same on every broker and every replica's log honours it;
* the leader side of the ISR (:class:`IsrManager`): followers' fetch offsets and the time they last caught up are
  observed on the Fetch path; every ``replica.lag.time.max.ms / 2`` the leader shrinks the ISR of lagging followers
  and expands it with caught-up ones through the controller, logging Kafka's ``Shrinking ISR`` / ``Expanding ISR``
  lines (logger ``kafka.cluster.Partition``);
* ReplicaManager's metrics (:func:`register_replica_manager_metrics`): ``LeaderCount``, ``PartitionCount``,
  ``UnderReplicatedPartitions``, ``UnderMinIsrPartitionCount``, ``AtMinIsrPartitionCount``, ``OfflineReplicaCount``,
  ``ReassigningPartitions`` gauges over the hosted partitions, ``IsrShrinksPerSec`` / ``IsrExpandsPerSec`` /
  ``FailedIsrUpdatesPerSec`` meters marked by the ISR changes.

Partitions found on disk at start-up are not led by the broker on its own authority: the controller decides.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.apis.convert import kafka_string_to_uuid
from broker.apis.data_plane import DataPlane
from broker.apis.distinct import repeated
from broker.apis.factory import build_kafka_apis, data_plane_of
from broker.apis.groups import coordinator_not_available
from broker.apis.kafka_apis import Handler, HandlerResult, KafkaApis
from broker.apis.metadata import INTERNAL_TOPICS, OFFSETS_TOPIC, internal_topic_message
from broker.apis.partitions import admin_handlers
from broker.cluster.http import ControllerClient
from broker.cluster.topic_config_sync import TopicConfigSync, refreshing_before_new_logs
from broker.config import ConfigException, KafkaConfig, load_config
from broker.fetcher import ReplicaFetcherManager
from broker.fetcher.thread import FetchSettings
from broker.lifecycle import BROKER_STARTED, STOP_SIGNALS, watch_parent
from broker.log import LogManager
from broker.log.checkpoint import read_offsets_checkpoint
from broker.log.manager import REPLICATION_OFFSET_CHECKPOINT
from broker.log4j import Log4j
from broker.metrics.registry import Meter, MetricName, MetricsRegistry
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.settings import BrokerSettings, GroupSettings, LogSettings, ReplicationSettings
from broker.state.model import Role, TopicPartition
from broker.state.replica_manager import BrokerState

__all__ = ["IsrManager", "IsrMeters", "LocalLogs", "cluster_apis_factory", "fetch_settings", "main",
           "register_replica_manager_metrics"]

# Heartbeat period; the controller's session timeout (default 3 s) must be several of these.
HEARTBEAT_INTERVAL_S = 0.5
# How long a starting broker keeps trying to reach a controller that refuses its connection (not listening yet, or
# restarting) before it gives up, and how often it tries: a Kafka broker waits as long for ZooKeeper
# (zookeeper.connection.timeout.ms defaults to the session timeout, 18 s since KIP-537). Only a refused connection
# is tried again: a registration that timed out may have reached the controller, and a second one would be a bounce.
REGISTRATION_TIMEOUT_S = 18.0
REGISTRATION_RETRY_S = 0.5


@dataclass(frozen=True, slots=True)
class IsrMeters:
    """ReplicaManager's ISR meters (``kafka.server:type=ReplicaManager,name=<Isr...>PerSec``)."""

    shrinks: Meter
    expands: Meter
    failed: Meter


def register_replica_manager_metrics(registry: MetricsRegistry, state: BrokerState,
                                     min_isr: Callable[[TopicPartition], int] = lambda _tp: 1) -> IsrMeters:
    """Kafka's ``ReplicaManager`` gauges over the partitions ``state`` hosts, and its ISR meters (to mark).

    ``min_isr`` is a led partition's ``min.insync.replicas`` (its log's topic config, as Kafka's
    ``Partition.isUnderMinIsr`` / ``isAtMinIsr`` read it)."""

    def led() -> list[tuple[TopicPartition, Any]]:
        return [(tp, p) for tp, p in state.partitions().items()
                if p.role is Role.LEADER and p.leader == state.broker_id]

    def name(n: str) -> MetricName:
        return MetricName.of("kafka.server", "ReplicaManager", n)

    registry.gauge(name("LeaderCount"), lambda: float(len(led())))
    registry.gauge(name("PartitionCount"), lambda: float(state.partition_count()))
    registry.gauge(name("UnderReplicatedPartitions"),
                   lambda: float(sum(1 for _tp, p in led() if len(p.isr) < len(p.replicas))))
    registry.gauge(name("UnderMinIsrPartitionCount"),
                   lambda: float(sum(1 for tp, p in led() if len(p.isr) < min_isr(tp))))
    registry.gauge(name("AtMinIsrPartitionCount"),
                   lambda: float(sum(1 for tp, p in led() if len(p.isr) == min_isr(tp))))
    registry.gauge(name("OfflineReplicaCount"), lambda: 0.0)  # one log directory, never taken offline
    registry.gauge(name("ReassigningPartitions"), lambda: float(sum(1 for _tp, p in led() if p.adding_replicas
                                                                     or p.removing_replicas)))
    return IsrMeters(registry.meter(name("IsrShrinksPerSec")), registry.meter(name("IsrExpandsPerSec")),
                     registry.meter(name("FailedIsrUpdatesPerSec")))


class LocalLogs:
    """``broker.state.model.LocalLog`` over the data plane's LogManager (offsets in the Leader/Follower lines)."""

    def __init__(self, logs: LogManager) -> None:
        self.logs = logs

    def log_end_offset(self, tp: TopicPartition) -> int:
        """The log end offset. ReplicaManager asks it of every partition it makes leader or follower, so the log is
        created here when missing (Kafka's ``Partition.createLogIfNotExists`` in makeLeader/makeFollower): a leader
        must serve follower fetches before its first produce."""
        return self.logs.get_or_create_log(tp).log_end_offset

    def high_watermark(self, tp: TopicPartition) -> int:
        """The high watermark (0 when there is no log yet)."""
        log = self.logs.get_log(tp)
        return log.high_watermark if log is not None else 0

    def delete_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """StopReplica with delete."""
        for tp in partitions:
            self.logs.delete_log(tp)


class IsrManager:
    """The leader side of the ISR (see the module docstring)."""

    def __init__(self, state: BrokerState, dp: DataPlane, client: ControllerClient, lag_ms: int,
                 log4j: Log4j, meters: IsrMeters | None = None) -> None:
        self.state = state
        self.meters = meters
        self.dp = dp
        self.client = client
        self.lag_ns = lag_ms * 1_000_000
        self.log4j = log4j
        self._lock = threading.Lock()
        # (tp, replica) -> (last fetch offset, last time it was caught up with the leader's log end, ns)
        self._followers: dict[tuple[TopicPartition, int], tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="isr-expiration", daemon=True)
        self._interval_s = lag_ms / 2000
        self._since: dict[tuple[TopicPartition, int], int] = {}  # (tp, leader epoch) -> first seen as leader

    def observe(self, tp: TopicPartition, replica: int, fetch_offset: int, leader_leo: int) -> None:
        """A follower fetched from ``fetch_offset`` while the leader's log ended at ``leader_leo``."""
        now = time.monotonic_ns()
        with self._lock:
            prev = self._followers.get((tp, replica))
            caught_up = now if fetch_offset >= leader_leo else (prev[1] if prev else 0)
            self._followers[(tp, replica)] = (fetch_offset, caught_up)

    def start(self) -> None:
        """Start the periodic check."""
        self._thread.start()

    def close(self) -> None:
        """Stop the periodic check."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.check_once()
            except Exception as exc:  # a controller hiccup must not stop ISR maintenance
                self.log4j.get_logger("kafka.server.ReplicaManager").warn(f"ISR check failed: {exc}")

    def check_once(self) -> None:
        """Shrink the ISR of lagging followers and expand it with caught-up ones, for every led partition."""
        now = time.monotonic_ns()
        me = self.state.broker_id
        for tp, ps in self.state.partitions().items():
            if ps.role is not Role.LEADER or ps.leader != me:
                continue
            log = self.dp.logs.get_log(tp)
            if log is None:
                continue
            with self._lock:
                seen = {r: self._followers.get((tp, r)) for r in ps.replicas if r != me}
            out = [r for r in ps.isr if r != me and (seen.get(r) is None or now - seen[r][1] > self.lag_ns)]  # type: ignore[index]
            # A follower that has not fetched since this broker became leader gets the lag time to do so.
            out = [r for r in out if now - self._leader_since(tp, ps.leader_epoch, now) > self.lag_ns]
            back = [r for r in ps.replicas if r != me and r not in ps.isr and seen.get(r) is not None
                    and seen[r][0] >= log.high_watermark]  # type: ignore[index]
            if out:
                new_isr = [r for r in ps.isr if r not in out]
                ends = " ".join(f"(brokerId: {r}, endOffset: {seen[r][0] if seen.get(r) else -1})"  # type: ignore[index]
                                for r in out)
                text = (f"Shrinking ISR from {','.join(map(str, ps.isr))} to {','.join(map(str, new_isr))}. Leader: "
                        f"(highWatermark: {log.high_watermark}, endOffset: {log.log_end_offset}). Out of sync "
                        f"replicas: {ends}.")
                if self._alter(tp, ps.leader_epoch, new_isr, text) and self.meters is not None:
                    self.meters.shrinks.mark()
            elif back:
                new_isr = [*ps.isr, *back]
                text = f"Expanding ISR from {','.join(map(str, ps.isr))} to {','.join(map(str, new_isr))}"
                if self._alter(tp, ps.leader_epoch, new_isr, text) and self.meters is not None:
                    self.meters.expands.mark()

    def _leader_since(self, tp: TopicPartition, epoch: int, now: int) -> int:
        return self._since.setdefault((tp, epoch), now)

    def _alter(self, tp: TopicPartition, leader_epoch: int, new_isr: list[int], text: str) -> bool:
        """Ask the controller for the new ISR; True when it took it (the shrink/expand happened)."""
        answer = self.client.alter_isr(self.state.broker_id, self.state.broker_epoch, tp.topic, tp.partition,
                                       leader_epoch, new_isr)
        logger = self.log4j.get_logger("kafka.cluster.Partition",
                                       f"[Partition {tp.topic}-{tp.partition} broker={self.state.broker_id}] ")
        if int(answer.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)) != ErrorCode.NONE:
            logger.info(f"Failed to update ISR to {','.join(map(str, new_isr))}: error code {answer.get('error_code')}")
            if self.meters is not None:
                self.meters.failed.mark()
            return False
        logger.info(text)
        epoch = answer.get("partition_epoch")
        new = self.state.update_led_isr(tp, leader_epoch, tuple(new_isr), None if epoch is None else int(epoch))
        log = self.dp.logs.get_log(tp)
        if new is not None and log is not None:
            self.dp.after_leader_append(tp, log, new)  # the HW may move now that the ISR is smaller
        return True


class ClusterMember:
    """Registration, heartbeats and ISR maintenance of one broker in the cluster."""

    def __init__(self, apis: KafkaApis, dp: DataPlane, client: ControllerClient, listeners: dict[str, tuple[str, int]],
                 protocols: dict[str, str], rack: str | None, isr: IsrManager, fetchers: ReplicaFetcherManager,
                 configs: TopicConfigSync, log4j: Log4j) -> None:
        self.apis = apis
        self.dp = dp
        self.client = client
        self.listeners = listeners
        self.protocols = protocols
        self.rack = rack
        self.isr = isr
        self.fetchers = fetchers
        self.configs = configs
        self._log = log4j.get_logger("kafka.server.KafkaServer", f"[KafkaServer id={apis.state.broker_id}] ")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat, name="controller-heartbeat", daemon=True)

    def register(self) -> None:
        """Register with the controller and adopt the broker epoch it assigns."""
        epoch = self.client.register(self.apis.state.broker_id, self.listeners, self.protocols, self.rack)
        self.apis.state.set_broker_epoch(epoch)
        self._log.info(f"Registered broker {self.apis.state.broker_id} at path /brokers/ids/"
                       f"{self.apis.state.broker_id} with addresses: {self.listeners}, czxid (broker epoch): {epoch}")

    def start(self) -> None:
        """Fetch the topic configs, register, then heartbeat and maintain ISRs in the background.

        Raises:
            OSError, ConnectionError: the controller refused the connection for :data:`REGISTRATION_TIMEOUT_S`, or
                failed the registration otherwise.
        """
        self.configs.refresh()
        deadline = time.monotonic() + REGISTRATION_TIMEOUT_S
        while True:
            try:
                self.register()
                break
            except OSError as exc:
                refused = isinstance(exc, ConnectionRefusedError) or isinstance(
                    getattr(exc, "reason", None), ConnectionRefusedError)  # urllib wraps it in a URLError
                if not refused or time.monotonic() + REGISTRATION_RETRY_S > deadline:
                    raise
                self._log.warn(f"Could not register with the controller: {exc}; retrying")
                time.sleep(REGISTRATION_RETRY_S)
        self._thread.start()
        self.isr.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_INTERVAL_S):
            try:
                answer = self.client.keep_alive(self.apis.state.broker_id, self.apis.state.broker_epoch)
                if answer.error_code != ErrorCode.NONE:
                    self._log.warn("The controller expired this broker's session: registering again")
                    self.register()
                self.configs.observe(answer.config_version)
            except (OSError, ConnectionError) as exc:
                self._log.warn(f"Heartbeat to the controller failed: {exc}")

    def leave(self) -> None:
        """Controlled shutdown: stop heartbeats and unregister, so leaders move without waiting for the session
        timeout (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        try:
            self.client.unregister(self.apis.state.broker_id, self.apis.state.broker_epoch)
            self._log.info("Controlled shutdown: left the cluster")
        except (OSError, ConnectionError) as exc:
            self._log.warn(f"Could not unregister from the controller: {exc}")

    def close(self) -> None:
        """Leave the cluster, stop ISR checks and fetchers."""
        self.leave()
        self.isr.close()
        self.fetchers.shutdown()


def _min_isr(dp: DataPlane) -> Callable[[TopicPartition], int]:
    """A hosted partition's ``min.insync.replicas`` (its topic's config, else the broker default)."""
    return lambda tp: dp.logs.topic_config(tp.topic).min_insync_replicas


def _checkpointed_high_watermarks(settings: LogSettings) -> dict[tuple[str, int], int]:
    """The high watermarks in every log dir's ``replication-offset-checkpoint`` (empty when there is none)."""
    out: dict[tuple[str, int], int] = {}
    for d in settings.log_dirs:
        path = Path(d) / REPLICATION_OFFSET_CHECKPOINT
        if path.exists():
            try:
                out.update({(tp.topic, tp.partition): off for tp, off in read_offsets_checkpoint(path).items()})
            except ValueError:
                pass  # a torn checkpoint: every high watermark falls back to the log start offset
    return out


def _forward_create_topics(client: ControllerClient, configs: TopicConfigSync, dp: DataPlane) -> Handler:
    """CreateTopics carried out by the controller, after the checks a standalone broker makes itself (a name given
    twice, an internal topic); the controller creates a topic's partitions all at once, as metadata."""

    def handle(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        names = list(dict.fromkeys(t["name"] for t in body["topics"]))
        twice = repeated(t["name"] for t in body["topics"])
        refused: dict[str, dict[str, Any]] = {}  # the standalone broker's rules (broker.apis.topics), answered here
        for n in twice:
            refused[n] = {"name": n, "error_code": ErrorCode.INVALID_REQUEST,
                          "error_message": "Found multiple entries for this topic."}
        for n in INTERNAL_TOPICS.intersection(names) - twice:
            if not dp.topic_exists(n):
                refused[n] = {"name": n, "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION,
                              "error_message": internal_topic_message(n)}
        specs = [{"name": t["name"], "num_partitions": int(t["num_partitions"]),
                  "replication_factor": int(t["replication_factor"]),
                  "configs": {str(c["name"]): str(c["value"]) for c in t.get("configs") or []
                              if c.get("value") is not None},
                  "validate_only": bool(body.get("validate_only", False))}
                 for t in body["topics"] if t["name"] not in refused]
        try:
            done = {r["name"]: r for r in client.create_topics(specs)} if specs else {}
        except (OSError, ConnectionError) as exc:
            done = {s["name"]: {"name": s["name"], "error_code": ErrorCode.NOT_CONTROLLER, "error_message": str(exc)}
                    for s in specs}
        done.update(refused)
        results = [done.get(n) or {"name": n, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                   "error_message": "The controller did not answer for this topic."} for n in names]
        created = any(r["error_code"] == ErrorCode.NONE for r in results)
        if created and any(s["configs"] for s in specs) and not body.get("validate_only"):
            configs.refresh()  # this broker has the new topics' configs before it answers
        status = client.status() if created else {"partitions": []}
        out = []
        for r in results:
            parts = [p for p in status["partitions"] if p["topic"] == r["name"]]
            entry: dict[str, Any] = {"name": r["name"], "error_code": r["error_code"],
                                     "error_message": r.get("error_message"), "topic_config_error_code": ErrorCode.NONE,
                                     "num_partitions": len(parts) if parts else -1,
                                     "replication_factor": len(parts[0]["replicas"]) if parts else -1,
                                     "configs": []}
            tid = status.get("topic_ids", {}).get(r["name"])
            if tid:
                entry["topic_id"] = kafka_string_to_uuid(tid)
            out.append(entry)
        del header
        codes = tuple(int(e["error_code"]) for e in out) or (ErrorCode.NONE,)
        return HandlerResult({"throttle_time_ms": 0, "topics": out}, codes)
    return handle


def _creating_offsets_topic(inner: Handler, dp: DataPlane, client: ControllerClient, partitions: int) -> Handler:
    """FindCoordinator for a group, while the metadata does not list ``__consumer_offsets``, asks the controller to
    create it (``offsets.topic.num.partitions``; the controller's default replication, ``min(3, live brokers)``) and
    answers COORDINATOR_NOT_AVAILABLE, as a Kafka broker does; clients look up again until the topic is there."""

    def handle(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        if int(body.get("key_type", 0)) != 0 or dp.topic_exists(OFFSETS_TOPIC):
            return inner(request, header, body)
        try:
            client.create_topics([{"name": OFFSETS_TOPIC, "num_partitions": partitions, "replication_factor": -1,
                                   "validate_only": False}])
        except (OSError, ConnectionError):
            pass  # the controller is away: the next group lookup asks again
        return coordinator_not_available(header, body)
    return handle


def _observing_fetch(inner: Handler, dp: DataPlane, isr: IsrManager) -> Handler:
    def handle(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        replica = int(body.get("replica_id", -1))
        seen: list[tuple[TopicPartition, int, int]] = []
        if replica >= 0:
            for t in body.get("topics") or ():
                for p in t.get("partitions") or ():
                    tp = TopicPartition(str(t.get("topic", "")), int(p["partition"]))
                    log = dp.logs.get_log(tp)
                    if log is not None:
                        seen.append((tp, int(p["fetch_offset"]), log.log_end_offset))
        for tp, offset, leo in seen:
            isr.observe(tp, replica, offset, leo)
        return inner(request, header, body)
    return handle


def _leader_hw_after_leader_and_isr(inner: Handler, dp: DataPlane) -> Handler:
    """After LeaderAndIsr, move the high watermark of every partition this broker leads as far as its ISR allows
    (Kafka's ``maybeIncrementLeaderHW`` in ``makeLeader``): a new leader whose ISR is itself alone, e.g. after a full
    cluster restart, must not wait for the next produce to expose what it holds."""
    def handle(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        result = inner(request, header, body)
        me = dp.state.broker_id
        for tp, ps in dp.state.partitions().items():
            if ps.role is Role.LEADER and ps.leader == me:
                log = dp.logs.get_log(tp)
                if log is not None and log.high_watermark < log.log_end_offset:
                    dp.after_leader_append(tp, log, ps)
        return result
    return handle


def fetch_settings(replication: ReplicationSettings) -> FetchSettings:
    """The replica fetchers' settings (``replica.fetch.*``, ``replica.fetcher.model``)."""
    return FetchSettings(model=replication.fetcher_model, max_wait_ms=replication.fetch_wait_max_ms,
                         min_bytes=replication.fetch_min_bytes, max_bytes=replication.fetch_response_max_bytes,
                         partition_max_bytes=replication.fetch_max_bytes, backoff_ms=replication.fetch_backoff_ms,
                         socket_timeout_ms=replication.socket_timeout_ms)


def cluster_apis_factory(server: Any) -> KafkaApis:
    """The apis factory of a cluster member (see the module docstring).

    Raises:
        ConfigException: ``planewatch.controller.url`` missing.
        ConnectionError: the controller cannot be reached.
    """
    cfg: KafkaConfig = server.config
    replication = ReplicationSettings.from_config(cfg)
    url = replication.controller_url
    if url is None:
        raise ConfigException("Missing required configuration planewatch.controller.url (the cluster's controller)")
    saved_hw = _checkpointed_high_watermarks(LogSettings.from_config(cfg))  # before the data plane loads the logs
    apis = build_kafka_apis(server)
    dp = data_plane_of(apis)
    state = apis.state
    # The controller decides who leads what: forget the leadership the data plane took for logs found on disk, and
    # the high watermarks it set to the log end (a standalone broker's view): a restarted follower must truncate to
    # what was committed (Kafka's replication-offset-checkpoint), not keep an uncommitted, maybe divergent tail.
    on_disk = list(state.partitions())
    if on_disk:
        state.host_local_partitions([], removed=on_disk)
        state.metadata_cache.apply_local([], sorted({tp.topic for tp in on_disk}))  # until UpdateMetadata says
    for ltp, log in dp.logs.all_logs().items():
        log.update_high_watermark(saved_hw.get((ltp.topic, ltp.partition), log.log_start_offset))
    client = ControllerClient(url)
    fetchers = ReplicaFetcherManager(state.broker_id, dp.logs, fetch_settings(replication), server.log4j,
                                     on_fetched=lambda tps: dp.purgatory.signal(), registry=server.registry)
    state.fetcher_manager = fetchers
    state.local_log = LocalLogs(dp.logs)
    server.log4j.set_level("kafka.server.ReplicaFetcherManager", "DEBUG")
    isr = IsrManager(state, dp, client, replication.lag_time_max_ms, server.log4j,
                     register_replica_manager_metrics(server.registry, state, _min_isr(dp)))
    configs = TopicConfigSync(url, dp, server.log4j)
    dp.topic_config_authority = configs  # alters are stored at the controller, applied by every broker
    apis.register(ApiKey.CREATE_TOPICS, _forward_create_topics(client, configs, dp))
    for api_key, handler in admin_handlers(client).items():  # the controller elects, adds partitions, moves replicas
        apis.register(api_key, handler)
    apis.register(ApiKey.FIND_COORDINATOR, _creating_offsets_topic(
        apis.handler(ApiKey.FIND_COORDINATOR), dp, client, GroupSettings.from_config(cfg).offsets_topic_num_partitions))
    apis.register(ApiKey.FETCH, _observing_fetch(apis.handler(ApiKey.FETCH), dp, isr))
    apis.register(ApiKey.LEADER_AND_ISR, refreshing_before_new_logs(
        _leader_hw_after_leader_and_isr(apis.handler(ApiKey.LEADER_AND_ISR), dp), dp, configs))
    listeners = {ep.name: (ep.host, ep.port) for ep in server.advertised_listeners()}
    protocols = {ep.name: ep.security_protocol for ep in server.advertised_listeners()}
    member = ClusterMember(apis, dp, client, listeners, protocols, BrokerSettings.from_config(cfg).rack, isr,
                           fetchers, configs, server.log4j)
    apis.add_closer(member.close)
    server.cluster_member = member  # main() leaves the cluster before shutting the server down
    member.start()
    return apis


def main(argv: list[str] | None = None) -> int:
    """Run one cluster broker until a stop signal, or until the launcher that started it dies."""
    from broker.server import KafkaServer

    parser = argparse.ArgumentParser(prog="broker.cluster.node")
    parser.add_argument("--config", required=True)
    parser.add_argument("--override", action="append", default=[])
    args = parser.parse_args(argv)
    sys.setswitchinterval(0.0005)  # as planewatch broker: keep KIP-291's threads responsive
    try:
        config = load_config(args.config, args.override)
    except ConfigException as e:
        print(f"broker: invalid configuration: {e}", file=sys.stderr)  # noqa: T201 - process entry point
        return 1
    server = KafkaServer(config, apis_factory=cluster_apis_factory)
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda s, f: stop.set())
    watch_parent()
    try:
        server.startup()
    except (OSError, ValueError, ConnectionError) as e:
        print(f"broker: cannot start: {e}", file=sys.stderr)  # noqa: T201 - process entry point
        return 1
    print(BROKER_STARTED.format(config.broker_id), flush=True)  # noqa: T201 - process entry point
    try:
        stop.wait()
    finally:
        member = getattr(server, "cluster_member", None)
        if isinstance(member, ClusterMember):
            member.leave()
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
