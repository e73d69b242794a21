"""The one configuration table and its typed views: every key a subsystem applies is declared, parsed and validated
in one place, and never reported unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.apis.configs import is_dynamic_key
from broker.apis.factory import data_plane_of
from broker.apis.kafka_apis import KafkaApis
from broker.apis.membership import GroupCoordinator
from broker.cluster.node import fetch_settings
from broker.config import CONFIG_DEFS, ConfigException, KafkaConfig
from broker.configdef import SECTIONS
from broker.fetcher.thread import FetchSettings
from broker.log import LogConfig, LogManagerConfig
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.settings import (
    VIEWS,
    BrokerSettings,
    DataPlaneSettings,
    GroupSettings,
    LogSettings,
    ReplicationSettings,
    SettingsView,
)
from broker.state import BrokerState
from tests.broker.data_plane_helpers import broker

# Read from KafkaConfig itself (listener derivation) and by the socket server (connection limits), not via a view.
LISTENER_AND_CONNECTION_KEYS = {
    "listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
    "security.inter.broker.protocol", "control.plane.listener.name", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides",
}


def cfg(props: dict[str, str]) -> KafkaConfig:
    return KafkaConfig({"broker.id": "1", "log.dirs": "/tmp/pw-test/data", **props})


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
def test_every_key_a_view_reads_is_in_the_table(view: type[SettingsView]) -> None:
    assert view.KEYS, view
    assert [k for k in view.KEYS if k not in CONFIG_DEFS] == []
    view.from_config(cfg({}))  # reads nothing it did not declare (an undeclared read raises KeyError)
    if "broker.id" not in view.KEYS:  # the one key without a valid default
        assert isinstance(view.defaults(), view)


def test_every_table_key_has_a_reader_and_a_section() -> None:
    read = {key for view in VIEWS for key in view.KEYS} | LISTENER_AND_CONNECTION_KEYS
    assert set(CONFIG_DEFS) - read == set()
    assert {d.section for d in CONFIG_DEFS.values()} == set(SECTIONS)


def test_a_view_reading_an_undeclared_key_fails() -> None:
    class Sneaky(GroupSettings):
        @classmethod
        def _build(cls, values: object) -> GroupSettings:  # type: ignore[override]
            return GroupSettings(values["num.partitions"], 0, 0)  # type: ignore[index]

    with pytest.raises(KeyError, match=r"num\.partitions without declaring it"):
        Sneaky.from_config(cfg({}))


def test_keys_applied_by_the_data_plane_are_not_unknown() -> None:
    c = cfg({"num.partitions": "3", "auto.create.topics.enable": "false", "default.replication.factor": "1",
             "metric.reporter.topic": "m", "planewatch.controller.url": "http://127.0.0.1:1",
             "replica.fetcher.model": "async", "replica.lag.time.max.ms": "4000",
             "log.flush.offset.checkpoint.interval.ms": "1000", "planewatch.leader.epoch.checkpoint.delay.ms": "5",
             "planewatch.log.line.version": "3.5", "group.min.session.timeout.ms": "1000"})
    assert c.unknown == []
    assert DataPlaneSettings.from_config(c) == DataPlaneSettings(False, 3, 1, 8)
    assert (c["num.partitions"], c["auto.create.topics.enable"]) == (3, False)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"log.segment.bytes": "abc"},
         "Invalid value abc for configuration log.segment.bytes: Not a number of type LONG"),
        ({"log.segment.bytes": "3"}, "Invalid value 3 for configuration log.segment.bytes: Value must be at least 14"),
        ({"log.retention.check.interval.ms": "-1"},
         "Invalid value -1 for configuration log.retention.check.interval.ms: Value must be at least 0"),
        ({"log.message.timestamp.type": "Whenever"},
         "Invalid value Whenever for configuration log.message.timestamp.type: String must be one of: CreateTime, "
         "LogAppendTime"),
        ({"planewatch.log.line.version": "2.0"},
         "Invalid value 2.0 for configuration planewatch.log.line.version: String must be one of: 1.0, 1.1, 2.6, 3.5"),
        ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
        ({"num.partitions": "many"}, "Invalid value many for configuration num.partitions: Not a number of type INT"),
        ({"default.replication.factor": "x"},
         "Invalid value x for configuration default.replication.factor: Not a number of type INT"),
        ({"auto.create.topics.enable": "yes"},
         "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"),
        ({"group.min.session.timeout.ms": "soon"},
         "Invalid value soon for configuration group.min.session.timeout.ms: Not a number of type INT"),
        ({"replica.fetcher.model": "eager"},
         "Invalid value eager for configuration replica.fetcher.model: String must be one of: locked, async"),
        ({"replica.lag.time.max.ms": "1s"},
         "Invalid value 1s for configuration replica.lag.time.max.ms: Not a number of type LONG"),
    ],
)
def test_bad_log_group_and_replication_values_fail_at_load(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException) as info:
        cfg(props)
    assert str(info.value) == message


def test_log_settings_precedence_and_the_log_configs_built_from_them() -> None:
    s = LogSettings.from_config(cfg({"log.roll.hours": "2", "log.retention.minutes": "3", "log.retention.hours": "9"}))
    assert (s.segment_ms, s.retention_ms, s.log_dirs) == (7_200_000, 180_000, ("/tmp/pw-test/data",))
    s = LogSettings.from_config(cfg({"log.roll.ms": "5", "log.roll.hours": "2", "log.retention.ms": "-1"}))
    assert (s.segment_ms, s.retention_ms) == (5, -1)
    assert LogSettings.from_config(KafkaConfig({"broker.id": "1", "log.dir": "/d"})).log_dirs == ("/d",)
    assert LogConfig() == LogConfig.from_settings(LogSettings.defaults())
    assert LogManagerConfig() == LogManagerConfig.from_settings(LogSettings.defaults())
    assert LogConfig.from_broker_properties({"log.segment.bytes": "2048"}).segment_bytes == 2048
    with pytest.raises(ConfigException, match=r"^Invalid value x for configuration log\.roll\.hours"):
        LogConfig.from_broker_properties({"log.roll.hours": "x"})


def test_replication_and_group_defaults_match_their_subsystems() -> None:
    assert fetch_settings(ReplicationSettings.defaults()) == FetchSettings()
    tuned = fetch_settings(ReplicationSettings.from_config(cfg({"replica.fetch.wait.max.ms": "100",
                                                                "replica.fetcher.model": "async"})))
    assert (tuned.max_wait_ms, tuned.model) == (100, "async")
    assert GroupSettings.defaults() == GroupSettings(6_000, 1_800_000, 4096)


def test_group_coordinator_takes_its_session_bounds_from_the_settings() -> None:
    join = {"group_id": "g", "session_timeout_ms": 2000, "rebalance_timeout_ms": 0, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    header = RequestHeader(11, 5, 1, "cli")
    request = Request(0, "c", "PLAINTEXT", "PLAINTEXT", "127.0.0.1", b"", header, 0)
    assert GroupCoordinator().join_group(request, header, join).body["error_code"] == 26  # INVALID_SESSION_TIMEOUT
    relaxed = GroupCoordinator(settings=GroupSettings.from_config(cfg({"group.min.session.timeout.ms": "1000"})))
    # accepted: a new member without a member id is then asked to rejoin with one (KIP-394, JoinGroup v4+)
    assert relaxed.join_group(request, header, join).body["error_code"] == 79  # MEMBER_ID_REQUIRED


def test_broker_identity_and_its_epoch_message() -> None:
    identity = BrokerSettings.from_config(cfg({"broker.epoch": "25", "cluster.id": "pw", "broker.rack": ""}))
    assert identity == BrokerSettings(1, None, "pw", 25)
    assert BrokerSettings.from_config(cfg({})).broker_epoch == -1
    with pytest.raises(ConfigException, match=r"^Invalid value soon for configuration broker\.epoch: Not a number"):
        BrokerSettings.from_config(cfg({"broker.epoch": "soon"}))


def test_dynamic_keys_come_from_the_table() -> None:
    dynamic = {name for name, d in CONFIG_DEFS.items() if d.dynamic}
    assert dynamic == {"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"}
    assert all(is_dynamic_key(k) for k in dynamic)
    assert is_dynamic_key("listener.name.plaintext.max.connections")
    assert not is_dynamic_key("num.io.threads")
    assert not is_dynamic_key("listener.name.plaintext.num.io.threads")


def test_data_plane_of_apis_without_one_fails_clearly() -> None:
    apis = KafkaApis(BrokerState(1), advertised_listeners={})
    with pytest.raises(RuntimeError, match="no data plane"):
        data_plane_of(apis)


def test_broker_applies_data_plane_keys_without_the_unknown_warning(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions="2", auto__create__topics__enable="false") as server:
        dp = data_plane_of(server.apis)  # type: ignore[arg-type]
        assert (dp.config.num_partitions, dp.config.auto_create_topics) == (2, False)
        assert dp.create_topic("t", -1, -1) == (0, None)
        assert len(dp.state.metadata_cache.snapshot.partitions["t"]) == 2
        server_log = (server.config.kafka_logs_dir / "server.log").read_text()
    assert "isn't a known config" not in server_log
