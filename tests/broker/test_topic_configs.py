"""Topic configs as Kafka 3.9 answers them: DescribeConfigs sources and synonyms, alters validated with Kafka's codes
and messages, applied to the running log, persisted; min.insync.replicas on acks=all; no applied key warned unknown.

The expected answers were read from Apache Kafka 3.9.1 (``planewatch/kafka/cluster.py``, one broker, ZooKeeper mode)
with the same client calls."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.apis.config_entries import BrokerLayers, ConfigSource, topic_entry
from broker.apis.factory import data_plane_of
from broker.apis.topic_configs import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, AlterError, apply_operations
from broker.config import CONFIG_DEFS
from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode
from broker.state import TopicPartition
from tests.broker.data_plane_helpers import Wire, bootstrap, broker
from tests.broker.test_data_plane import (
    PRODUCE_V,
    _control_props,
    _leader_and_isr,
    _update_metadata,
    batch,
    create,
    part,
    produce_body,
)
from tests.polling import wait_until

WAIT_S = 20.0  # a retention check every 200 ms; a loaded 2-core machine


# ------------------------------------------------------------------------------------------------------ pure core
def test_synonyms_follow_kafkas_order_and_drop_rule() -> None:
    hours_only = BrokerLayers({}, {}, {"log.retention.hours": "24"})
    # Kafka drops every synonym before the first named log.retention.ms: no synonym, DEFAULT_CONFIG
    entry = topic_entry("retention.ms", "86400000", {}, hours_only, include_synonyms=True)
    assert (entry["config_source"], entry["synonyms"]) == (ConfigSource.DEFAULT_CONFIG, [])
    static_ms = BrokerLayers({}, {}, {"log.retention.ms": "1000"})
    entry = topic_entry("retention.ms", "5", {"retention.ms": "5"}, static_ms, include_synonyms=True)
    assert [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]] == [
        ("retention.ms", "5", 1), ("log.retention.ms", "1000", 4), ("log.retention.hours", "168", 5)]
    assert entry["config_source"] == ConfigSource.TOPIC_CONFIG
    assert not entry["read_only"]
    assert topic_entry("retention.ms", "5", {}, static_ms)["synonyms"] == []  # only when asked for


def test_incremental_operations_as_kafka_applies_them() -> None:
    current = {"retention.ms": "5", "cleanup.policy": "delete"}
    ops: list[dict[str, Any]] = [{"name": "retention.ms", "value": None, "config_operation": OP_DELETE},
           {"name": "segment.bytes", "value": "1000", "config_operation": OP_SET},
           {"name": "cleanup.policy", "value": "compact", "config_operation": OP_APPEND}]
    assert apply_operations(current, ops, True) == {"cleanup.policy": "delete,compact", "segment.bytes": "1000"}
    subtract = [{"name": "cleanup.policy", "value": "delete", "config_operation": OP_SUBTRACT}]
    assert apply_operations(current, subtract, True)["cleanup.policy"] == ""
    assert apply_operations(current, [{"name": "flush.ms", "value": "9"}], False) == {"flush.ms": "9"}
    with pytest.raises(AlterError, match=r"^Config value append is not allowed for config key: retention\.ms$"):
        apply_operations({}, [{"name": "retention.ms", "value": "1", "config_operation": OP_APPEND}], True)
    with pytest.raises(AlterError, match="duplicate config keys") as info:
        apply_operations({}, [{"name": "flush.ms", "value": "1"}, {"name": "flush.ms", "value": "2"}], True)
    assert info.value.code == ErrorCode.INVALID_REQUEST


# ------------------------------------------------------------------------------------------------------ real clients
def _alter(admin: AdminClient, topic: str, **values: str) -> None:
    res = ConfigResource(ResourceType.TOPIC, topic)
    for k, v in values.items():
        res.add_incremental_config(ConfigEntry(k.replace("__", "."), v, incremental_operation=AlterConfigOpType.SET))
    admin.incremental_alter_configs([res])[res].result(10)


def _describe(admin: AdminClient, rtype: ResourceType, name: str) -> dict[str, Any]:
    res = ConfigResource(rtype, name)
    return dict(admin.describe_configs([res])[res].result(10))


@pytest.mark.timeout(120)
def test_confluent_alters_retention_and_the_log_honours_it_across_a_restart(tmp_path: Path) -> None:
    props = {"log__retention__check__interval__ms": "200", "log__retention__hours": "24"}
    with broker(tmp_path, **props) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        admin.create_topics([NewTopic("ret", 1, 1)])["ret"].result(10)
        _alter(admin, "ret", segment__bytes="2000")  # the next appends roll every ~2 kB
        old = int(time.time() * 1000) - 3_600_000  # an hour ago: inside 24 h, outside one minute
        p = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 0, "batch.num.messages": 1})
        for i in range(30):
            p.produce("ret", b"x" * 200, key=str(i).encode(), timestamp=old)
            p.poll(0)
        assert p.flush(10) == 0
        log = data_plane_of(server.apis).logs.get_log(TopicPartition("ret", 0))  # type: ignore[arg-type]
        assert log is not None
        assert len(log.segments) >= 3
        assert log.log_start_offset == 0
        described = _describe(admin, ResourceType.TOPIC, "ret")
        assert described["retention.ms"].value == "86400000"
        assert described["retention.ms"].source == ConfigSource.DEFAULT_CONFIG  # Kafka: hours are dropped
        assert described["segment.bytes"].source == ConfigSource.TOPIC_CONFIG
        assert not described["retention.ms"].is_read_only
        _alter(admin, "ret", retention__ms="60000")
        wait_until(lambda: log.log_start_offset == 30, WAIT_S, "the retention check to delete the old segments")
        c = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "g"})
        assert c.get_watermark_offsets(CkTopicPartition("ret", 0), timeout=10) == (30, 30)
        c.close()
        del admin
    server_log = (tmp_path / "logs" / "server.log").read_text()
    assert "Processing override for entityPath: topics/ret with config: HashMap(retention.ms -> 60000, " \
           "segment.bytes -> 2000)" in server_log
    assert "due to retention time 60000ms breach" in server_log
    with broker(tmp_path, **props) as server:  # persisted and re-applied at start-up
        config = data_plane_of(server.apis).logs.topic_config("ret")  # type: ignore[arg-type]
        assert (config.retention_ms, config.segment_bytes) == (60_000, 2000)
        described = _describe(AdminClient({"bootstrap.servers": bootstrap(server)}), ResourceType.TOPIC, "ret")
        assert (described["retention.ms"].value, described["retention.ms"].source) == ("60000", 1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("key", "value", "code", "message"), [
    ("retention.ms", "abc", ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=TOPIC, "
     "name='bad'): Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ("segment.bytes", "3", ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=TOPIC, "
     "name='bad'): Invalid value 3 for configuration segment.bytes: Value must be at least 14"),
    ("min.insync.replicas", "0", ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource("
     "type=TOPIC, name='bad'): Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("cleanup.policy", "bogus", ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource("
     "type=TOPIC, name='bad'): Invalid value bogus for configuration cleanup.policy: String must be one of: "
     "compact, delete"),
    ("foo.bar", "1", ErrorCode.INVALID_CONFIG, "Unknown topic config name: foo.bar"),
    ("cleanup.policy", "compact", ErrorCode.INVALID_CONFIG, None),  # Kafka compacts; the reference log cannot
])
def test_bad_values_get_kafkas_error_code_and_message(tmp_path: Path, key: str, value: str, code: int,
                                                      message: str | None) -> None:
    with broker(tmp_path) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        admin.create_topics([NewTopic("bad", 1, 1)])["bad"].result(10)
        res = ConfigResource(ResourceType.TOPIC, "bad")
        res.add_incremental_config(ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET))
        with pytest.raises(KafkaException) as info:
            admin.incremental_alter_configs([res])[res].result(10)
        error = info.value.args[0]
        assert error.code() == code
        if message is not None:
            assert error.str() == message
        assert data_plane_of(server.apis).topic_overrides("bad") == {}  # type: ignore[arg-type]
        missing = ConfigResource(ResourceType.TOPIC, "missing", set_config={"retention.ms": "1"})
        with pytest.raises(KafkaException) as info:
            admin.alter_configs([missing])[missing].result(10)  # the legacy API
        assert (info.value.args[0].code(), info.value.args[0].str()) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist.")


@pytest.mark.timeout(60)
def test_broker_describe_lists_every_table_key_with_its_source(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions="3", log__retention__ms="5000") as server:
        entries = _describe(AdminClient({"bootstrap.servers": bootstrap(server)}), ResourceType.BROKER, "1")
    assert set(CONFIG_DEFS) <= set(entries)
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == ("3", 4)
    assert entries["log.retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["log.retention.hours"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["broker.rack"].value is None
    assert entries["broker.rack"].is_read_only
    assert not entries["max.connections"].is_read_only


@pytest.mark.timeout(60)
def test_kafka_python_and_aiokafka_describe_and_alter_topic_configs(tmp_path: Path) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource as AioResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioType
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType as KpType
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic

    with broker(tmp_path) as server:
        kp = KafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=10_000)
        try:
            kp.create_topics([KpNewTopic("kp", 1, 1)])
            kp.alter_configs([KpResource(KpType.TOPIC, "kp", configs={"retention.bytes": "4096"})])
            resp = kp.describe_configs([KpResource(KpType.TOPIC, "kp")], include_synonyms=True)
        finally:
            kp.close()
        assert data_plane_of(server.apis).logs.topic_config("kp").retention_bytes == 4096  # type: ignore[arg-type]
        assert "4096" in repr(resp)

        async def aio() -> list[Any]:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(server), request_timeout_ms=10_000)
            await admin.start()
            try:
                await admin.alter_configs([AioResource(AioType.TOPIC, "kp", {"max.message.bytes": "2000"})])
                return list(await admin.describe_configs([AioResource(AioType.TOPIC, "kp")], include_synonyms=True))
            finally:
                await admin.close()

        described = asyncio.run(aio())
        assert data_plane_of(server.apis).logs.topic_config("kp").max_message_bytes == 2000  # type: ignore[arg-type]
        assert "2000" in repr(described)


@pytest.mark.timeout(60)
def test_acks_all_below_the_topics_min_insync_replicas_is_not_enough_replicas(tmp_path: Path) -> None:
    names = {k.replace(".", "__"): v for k, v in _control_props().items()}
    with broker(tmp_path, **names) as server:
        w, ctl = Wire(server.bound_port("PLAINTEXT")), Wire(server.bound_port("CONTROLLER"))
        create(w, "minisr")
        assert ctl.call(ApiKey.UPDATE_METADATA, 6, _update_metadata("minisr", 1, 1, [1]))["error_code"] == 0
        assert ctl.call(ApiKey.LEADER_AND_ISR, 4, _leader_and_isr("minisr", 1, 1, [1]))["error_code"] == 0
        setting = {"name": "min.insync.replicas", "config_operation": 0, "value": "2"}
        alter = {"resources": [{"resource_type": 2, "resource_name": "minisr", "configs": [setting]}],
                 "validate_only": False}
        assert w.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, alter)["responses"][0]["error_code"] == 0
        refused = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("minisr", batch(1), acks=-1)))
        assert (refused["error_code"], refused["base_offset"]) == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("minisr", batch(1), acks=1)))["error_code"] == 0
        setting["value"] = "1"
        assert w.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, alter)["responses"][0]["error_code"] == 0
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("minisr", batch(1), acks=-1)))["error_code"] == 0
        w.close()
        ctl.close()


@pytest.mark.timeout(60)
def test_a_broker_using_every_table_key_warns_none_unknown(tmp_path: Path) -> None:
    unset = {"log.retention.ms": "604800000", "log.roll.ms": "604800000", "log.retention.minutes": "10080",
             "log.flush.interval.ms": "9223372036854775807", "broker.rack": "r1", "cluster.id": "pw-cluster",
             "inter.broker.listener.name": "PLAINTEXT", "metric.reporter.topic": "",
             "planewatch.controller.url": "", "listener.name.plaintext.max.connections": "1000"}
    skipped = {"security.inter.broker.protocol", "control.plane.listener.name"}  # exclusive with the ones set above
    given = {name: d.default for name, d in CONFIG_DEFS.items() if d.default is not None and name not in skipped}
    given = {k: ("true" if v is True else "false" if v is False else ",".join(v) if isinstance(v, list) else v)
             for k, v in given.items()}
    given.pop("listeners"), given.pop("broker.id"), given.pop("log.dir")
    given.update(unset)
    missing = set(CONFIG_DEFS) - set(given) - skipped - {"listeners", "broker.id", "log.dir", "log.dirs",
                                                         "advertised.listeners", "kafka.logs.dir", "metrics.dir"}
    assert missing == set()
    with broker(tmp_path, **{k.replace(".", "__"): v for k, v in given.items()}) as server:
        assert server.config.unknown == []
    assert "isn't a known config" not in (tmp_path / "logs" / "server.log").read_text()
