"""Topic configs cluster-wide on the reference cluster: the controller stores each topic's overrides with a change
version (persisted), CreateTopics forwards its configs, an alter on any broker is stored at the controller, and every
broker applies it to its logs (followers included) and describes the same.

The store and the controller run in-process first (no network but 127.0.0.1); the cluster tests start a controller
and three brokers as separate processes (``broker.cluster.launcher``) and always stop them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.apis.config_entries import ConfigSource
from broker.apis.data_plane import DataPlane
from broker.apis.topic_configs import AlterError
from broker.cluster.controller import Controller, ControllerSettings
from broker.cluster.http import ControllerClient
from broker.cluster.launcher import Cluster
from broker.cluster.topic_config_store import TopicConfigStore
from broker.cluster.topic_config_sync import TopicConfigSync
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode
from tests.broker.cluster_helpers import (
    CLUSTER_POLL,
    CLUSTER_S,
    control_request,
    partition,
    running_cluster,
    running_controller,
    status,
)
from tests.broker.data_plane_helpers import free_port
from tests.polling import wait_until

CALL_TIMEOUT_S = 30.0
RESOURCE_TOPIC = 2
BAD_CONFIGS = [  # Kafka 3.9 (ZooKeeper mode) answers CreateTopics' ConfigException with INVALID_CONFIG and its text
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"segment.bytes": "3"}, "Invalid value 3 for configuration segment.bytes: Value must be at least 14"),
    ({"foo.bar": "1"}, "Unknown topic config name: foo.bar"),
]


# ------------------------------------------------------------------------------------------------ store, in-process
def test_store_versions_changes_and_persisted_form() -> None:
    store = TopicConfigStore()
    assert store.changes_since(0) == (0, {})
    v1 = store.put("a", {"retention.ms": "1"})
    v2 = store.put("b", {"segment.bytes": "2000"})
    v3 = store.put("a", {})  # every override deleted: kept, so brokers learn of it
    assert (v1, v2, v3) == (1, 2, 3)
    assert store.changes_since(0) == (3, {"a": {}, "b": {"segment.bytes": "2000"}})
    assert store.changes_since(2) == (3, {"a": {}})
    assert store.changes_since(3) == (3, {})
    again = TopicConfigStore.from_json(store.to_json())
    assert (again.version, again.changes_since(0)) == (3, store.changes_since(0))
    assert TopicConfigStore.from_json({}).version == 0  # a state saved before topic configs


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[tuple[Controller, ControllerClient]]:
    with running_controller(tmp_path) as running:
        yield running


@pytest.mark.timeout(60)
def test_controller_stores_announces_and_persists_topic_configs(
        tmp_path: Path, controller: tuple[Controller, ControllerClient]) -> None:
    c, client = controller
    epoch = client.register(1, {"PLAINTEXT": ("127.0.0.1", free_port())}, {}, None)  # nobody listens: retries
    assert client.keep_alive(1, epoch).config_version == 0
    [ok] = client.create_topics([{"name": "t", "num_partitions": 1, "replication_factor": 1,
                                  "configs": {"retention.ms": "5000"}}])
    assert ok["error_code"] == ErrorCode.NONE
    assert client.keep_alive(1, epoch).config_version == 1
    assert client.topic_configs(0).topics == {"t": {"retention.ms": "5000"}}
    answer = client.alter_topic_configs("t", {"retention.ms": "6000", "segment.bytes": "2000"})
    assert (answer["error_code"], answer["version"]) == (ErrorCode.NONE, 2)
    changes = client.topic_configs(1)
    assert (changes.version, changes.topics) == (2, {"t": {"retention.ms": "6000", "segment.bytes": "2000"}})
    missing = client.alter_topic_configs("nope", {"retention.ms": "1"})
    assert (missing["error_code"], missing["error_message"]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                 "The topic 'nope' does not exist.")
    bad = client.alter_topic_configs("t", {"retention.ms": "x"})
    assert bad["error_code"] == ErrorCode.INVALID_CONFIG
    for configs, message in BAD_CONFIGS:
        [refused] = client.create_topics([{"name": "u", "num_partitions": 1, "replication_factor": 1,
                                           "configs": configs}])
        assert (refused["error_code"], refused["error_message"]) == (ErrorCode.INVALID_CONFIG, message)
    [exists] = client.create_topics([{"name": "t", "num_partitions": 1, "replication_factor": 1,
                                      "configs": {"retention.ms": "x"}}])
    assert exists["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS  # Kafka checks the configs after the topic
    assert client.status()["topic_configs"] == {"t": {"retention.ms": "6000", "segment.bytes": "2000"}}
    restarted = Controller(tmp_path / "state", c.log4j, MetricsRegistry(), ControllerSettings())  # reads the state
    assert restarted.topic_configs.changes_since(0) == (2, {"t": {"retention.ms": "6000", "segment.bytes": "2000"}})


class _Overrides:
    """The two DataPlane methods the sync uses, over a dict (what was applied, in order)."""

    def __init__(self) -> None:
        self.applied: list[tuple[str, dict[str, str]]] = []
        self.current: dict[str, dict[str, str]] = {}

    def topic_overrides(self, topic: str) -> dict[str, str]:
        return dict(self.current.get(topic, {}))

    def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        self.applied.append((topic, dict(overrides)))
        self.current[topic] = dict(overrides)


@pytest.mark.timeout(60)
def test_sync_applies_changes_once_and_stores_through_the_controller(
        controller: tuple[Controller, ControllerClient]) -> None:
    _, client = controller
    client.register(1, {"PLAINTEXT": ("127.0.0.1", free_port())}, {}, None)
    client.create_topics([{"name": "t", "num_partitions": 1, "replication_factor": 1,
                           "configs": {"retention.ms": "5000"}}])
    dp = _Overrides()
    sync = TopicConfigSync(client.url, cast(DataPlane, dp), Log4j())
    sync.observe(1)
    assert (sync.version, dp.applied) == (1, [("t", {"retention.ms": "5000"})])
    sync.observe(1)  # nothing newer: no fetch
    sync.refresh()  # nothing changed since version 1
    assert len(dp.applied) == 1
    sync.store("t", {"retention.ms": "6000"})  # stored at the controller, applied here at once
    assert (sync.version, dp.current["t"]) == (2, {"retention.ms": "6000"})
    with pytest.raises(AlterError) as info:
        sync.store("missing", {"retention.ms": "1"})
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    client.alter_topic_configs("t", {})  # another broker deleted every override
    sync.observe(3)
    assert dp.current["t"] == {}
    away = TopicConfigSync("http://127.0.0.1:1", cast(DataPlane, dp), Log4j())  # nobody listens on port 1
    away.refresh()  # logged, nothing applied
    with pytest.raises(AlterError) as info:
        away.store("t", {"retention.ms": "1"})
    assert info.value.code == ErrorCode.NOT_CONTROLLER


# ------------------------------------------------------------------------------------------------ the cluster
def _describe(port: int, topic: str) -> dict[str, tuple[str, int]]:
    """DescribeConfigs v1 of ``topic`` sent to one broker: ``{name: (value, source)}`` (empty while the broker's
    metadata does not list the topic yet: UNKNOWN_TOPIC_OR_PARTITION)."""
    body = {"resources": [{"resource_type": RESOURCE_TOPIC, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False}
    [result] = control_request(port, ApiKey.DESCRIBE_CONFIGS, 1, body)["results"]
    if result["error_code"] != ErrorCode.NONE:
        assert result["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return {}
    return {str(c["name"]): (str(c["value"]), int(c["config_source"])) for c in result["configs"]}


def _described_everywhere(cluster: Cluster, topic: str, expected: dict[str, str]) -> bool:
    for b in cluster.brokers:
        described = _describe(cluster.ports[b]["PLAINTEXT"], topic)
        if any(described.get(k) != (v, ConfigSource.TOPIC_CONFIG) for k, v in expected.items()):
            return False
    return True


def _base_offsets(cluster: Cluster, broker_id: int, topic: str) -> list[int]:
    """The base offsets of a replica's segments, from its log directory."""
    d = cluster.broker_dir(broker_id) / "data" / f"{topic}-0"
    return sorted(int(f.stem) for f in d.glob("*.log")) if d.exists() else []


def _alter(bootstrap: str, topic: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(CALL_TIMEOUT_S)


def _produce_old(bootstrap: str, topic: str, n: int) -> None:
    old = int(time.time() * 1000) - 3_600_000  # an hour ago: inside one day, outside one minute
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 1})
    for i in range(n):
        p.produce(topic, b"x" * 200, key=str(i).encode(), timestamp=old)
        p.poll(0)
    assert p.flush(60) == 0


@pytest.mark.timeout(240)
@pytest.mark.integration
@pytest.mark.slow
def test_topic_configs_are_cluster_wide(tmp_path: Path) -> None:
    extra = {"log.retention.check.interval.ms": "200", "log.retention.hours": "24"}
    with running_cluster(tmp_path / "c", brokers=3, extra=extra) as cluster:
        broker1 = f"127.0.0.1:{cluster.ports[1]['PLAINTEXT']}"
        admin = AdminClient({"bootstrap.servers": broker1})
        created = {"retention.ms": "86400000", "segment.bytes": "2000"}
        admin.create_topics([NewTopic("tc", 1, 3, config=created)])["tc"].result(CALL_TIMEOUT_S)
        wait_until(lambda: _described_everywhere(cluster, "tc", created),
                   CLUSTER_S, "every broker describes tc's configs", **CLUSTER_POLL)
        for configs, message in BAD_CONFIGS:
            with pytest.raises(KafkaException) as info:
                admin.create_topics([NewTopic("bad", 1, 3, config=configs)])["bad"].result(CALL_TIMEOUT_S)
            assert (info.value.args[0].code(), info.value.args[0].str()) == (ErrorCode.INVALID_CONFIG, message)
        assert partition(cluster, "bad", 0) is None

        _produce_old(cluster.bootstrap_servers(), "tc", 30)
        # every replica, followers included, rolls at the topic's segment.bytes (the broker default is 1 GiB)
        wait_until(lambda: all(len(_base_offsets(cluster, b, "tc")) >= 3 for b in (1, 2, 3)),
                   CLUSTER_S, "every replica holds the records in several segments", **CLUSTER_POLL)
        assert all(_base_offsets(cluster, b, "tc")[0] == 0 for b in (1, 2, 3))

        _alter(broker1, "tc", "retention.ms", "60000")
        wait_until(lambda: all(_base_offsets(cluster, b, "tc") == [30] for b in (1, 2, 3)),
                   60, "every replica deletes the segments outside one minute", **CLUSTER_POLL)
        expected = {"retention.ms": "60000", "segment.bytes": "2000"}
        wait_until(lambda: _described_everywhere(cluster, "tc", expected),
                   CLUSTER_S, "every broker describes the new retention", **CLUSTER_POLL)

        # a restarted broker keeps the configs, and learns what changed while it was down
        # a follower that is not the controller id either: the admin client's requests keep their broker
        leader, controller_id = int((partition(cluster, "tc", 0) or {})["leader"]), status(cluster)["controller_id"]
        follower = next(b for b in (1, 2, 3) if b not in (leader, controller_id))
        cluster.kill_broker(follower)
        _alter(f"127.0.0.1:{cluster.ports[leader]['PLAINTEXT']}", "tc", "max.message.bytes", "500000")
        cluster.start_broker(follower)
        expected["max.message.bytes"] = "500000"
        wait_until(lambda: _described_everywhere(cluster, "tc", expected),
                   CLUSTER_S, "the restarted broker describes every config", **CLUSTER_POLL)
        restarted: dict[str, Any] = _describe(cluster.ports[follower]["PLAINTEXT"], "tc")
        assert restarted["retention.ms"] == ("60000", ConfigSource.TOPIC_CONFIG)
    server_log = (cluster.broker_dir(1) / "logs" / "server.log").read_text()
    assert "Processing override for entityPath: topics/tc with config: HashMap(retention.ms -> 60000, " \
           "segment.bytes -> 2000)" in server_log
