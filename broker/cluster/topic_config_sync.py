"""A cluster broker's topic configs kept equal to the controller's (Kafka's ``DynamicConfigManager``).

Theory of operation
-------------------
The controller keeps every topic's config overrides with a change version (:mod:`broker.cluster.topic_config_store`,
Kafka's ``/config/topics/<topic>`` and ``/config/changes``). A :class:`TopicConfigSync` remembers the version this
broker has applied and fetches the topics changed since then:

* at start-up, before registering: every topic's overrides (version 0), so the logs the controller's first
  LeaderAndIsr makes leader or follower run with the cluster's configs, changes made while this broker was down
  included;
* when a heartbeat answers a newer config version (:meth:`TopicConfigSync.observe`): every broker, leader or
  follower of the topic, applies a change within a heartbeat interval, as Kafka's brokers on the change
  notification;
* before a LeaderAndIsr that names a partition without a local log (a new topic, new partitions, a replica moved
  here) is handled (:func:`refreshing_before_new_logs`): Kafka's ``Partition.createLog`` reads the topic's config
  from ZooKeeper, so a new log never starts with the broker defaults when its topic has overrides;
* after an alter this broker received (:meth:`TopicConfigSync.store`, the data plane's
  :class:`~broker.apis.data_plane.TopicConfigAuthority`): the controller stores the new set, this broker applies it
  at once, the others at their next heartbeat.

Applying a topic's overrides is :meth:`broker.apis.data_plane.DataPlane.set_topic_overrides` (the running logs at
once, persisted locally for the next start-up); a change logs Kafka's ``DynamicConfigManager`` line. A set the logs
refuse is logged and skipped. Fetches are serialised by one lock; an unreachable controller is logged and the local
overrides stay until the next fetch.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from broker.apis.convert import leader_and_isr_from_body
from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import Handler, HandlerResult
from broker.apis.topic_configs import AlterError, override_line
from broker.cluster.http import ControllerClient
from broker.log4j import Log4j
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.topic_partition import TopicPartition

__all__ = ["FETCH_TIMEOUT_S", "TopicConfigSync", "refreshing_before_new_logs"]

# A fetch blocks a request handler (LeaderAndIsr, AlterConfigs): bounded well below a client's request timeout (30 s)
# and the controller's wait for a LeaderAndIsr answer.
FETCH_TIMEOUT_S = 5.0


class TopicConfigSync:
    """This broker's copy of the controller's topic configs (see the module docstring).

    Args:
        url: the controller's registration channel (``planewatch.controller.url``).
        dp: the data plane whose logs take the overrides.
        log4j: for the ``DynamicConfigManager`` lines.
    """

    def __init__(self, url: str, dp: DataPlane, log4j: Log4j) -> None:
        self.client = ControllerClient(url, timeout_s=FETCH_TIMEOUT_S)
        self.dp = dp
        self._log = log4j.get_logger("kafka.server.DynamicConfigManager")
        self._lock = threading.Lock()
        self.version = 0  # the controller's config version applied here

    def observe(self, version: int) -> None:
        """A heartbeat answered the controller's config ``version``: fetch the changes when it is newer, unless a
        fetch is under way (the heartbeat thread never waits for one: the session timeout is a few heartbeats; the
        next heartbeat asks again)."""
        if version > self.version:
            self.refresh(wait=False)

    def refresh(self, *, wait: bool = True) -> None:
        """Fetch and apply the topics changed since the applied version; an unreachable controller is logged.
        ``wait`` False: return at once when another fetch is under way."""
        try:
            self.fetch(wait=wait)
        except (OSError, ConnectionError) as exc:
            self._log.warn(f"Could not fetch topic configs from the controller: {exc}")

    def fetch(self, *, wait: bool = True) -> None:
        """Fetch and apply the topics changed since the applied version (``wait`` False: nothing when another fetch
        is under way).

        Raises:
            OSError, ConnectionError: the controller could not be reached (nothing applied).
        """
        if not self._lock.acquire(blocking=wait):
            return
        try:
            changes = self.client.topic_configs(self.version)
            for topic, overrides in changes.topics.items():
                self._apply(topic, overrides)
            self.version = max(self.version, changes.version)
        finally:
            self._lock.release()

    def _apply(self, topic: str, overrides: Mapping[str, str]) -> None:
        if dict(overrides) == self.dp.topic_overrides(topic):
            return
        try:
            self.dp.set_topic_overrides(topic, overrides)
        except ValueError as exc:
            self._log.error(f"Ignoring configs of topic {topic}: {exc}")
            return
        except OSError as exc:  # the running logs have them; a restart fetches them again
            self._log.error(f"Could not persist the configs of topic {topic}: {exc}")
        self._log.info(override_line(topic, overrides))

    def store(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Store ``topic``'s new overrides at the controller, then apply them here.

        Raises:
            AlterError: the controller refused them (its code and message) or could not be reached (NOT_CONTROLLER,
                as a forwarded CreateTopics).
        """
        try:
            answer = self.client.alter_topic_configs(topic, dict(overrides))
        except (OSError, ConnectionError) as exc:
            raise AlterError(ErrorCode.NOT_CONTROLLER, f"The controller could not be reached: {exc}") from None
        code = int(answer.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
        if code != ErrorCode.NONE:
            raise AlterError(code, str(answer.get("error_message") or ""))
        try:
            self.fetch()
        except (OSError, ConnectionError):
            with self._lock:  # stored: apply ours now, the next heartbeat brings any later change
                self._apply(topic, overrides)


def refreshing_before_new_logs(inner: Handler, dp: DataPlane, sync: TopicConfigSync) -> Handler:
    """LeaderAndIsr: when it names a partition without a local log, fetch the topic configs first (see the module
    docstring)."""

    def handle(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        partitions = leader_and_isr_from_body(body, header.api_version).partitions
        if any(dp.logs.get_log(TopicPartition(p.topic, p.partition)) is None for p in partitions):
            sync.refresh()
        return inner(request, header, body)
    return handle
