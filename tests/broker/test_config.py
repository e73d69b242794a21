"""broker.config and broker.properties: Kafka's names, defaults, derivation and validation messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import INT_MAX, ConfigException, KafkaConfig, load_config, parse_overrides
from broker.properties import PropertiesSyntaxError, parse_properties

REPO = Path(__file__).resolve().parents[2]


def cfg(**props: str) -> KafkaConfig:
    base = {"broker.id": "1", "log.dirs": "/tmp/pw-test/data"}
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return KafkaConfig(base)


def raw(props: dict[str, str]) -> KafkaConfig:
    return KafkaConfig({"broker.id": "1", **props})


# -- properties syntax -------------------------------------------------------------------------------------------
def test_properties_separators_comments_and_whitespace() -> None:
    text = "# comment\n! also a comment\n\n  a=1\nb : 2\nc 3\nd=\ne\n  f  =  spaced value  \n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "", "e": "", "f": "spaced value  "}


def test_properties_continuations_and_escapes() -> None:
    text = "listeners=PLAINTEXT://h:1,\\\n    CONTROLLER://h:2\nkey\\ with\\=sep=v\\tx\\u0041\nodd=a\\\\\nnext=1\r\n"
    props = parse_properties(text)
    assert props["listeners"] == "PLAINTEXT://h:1,CONTROLLER://h:2"
    assert props["key with=sep"] == "v\txA"
    assert props["odd"] == "a\\"  # an even number of backslashes does not continue the line
    assert props["next"] == "1"


def test_properties_later_duplicate_wins_and_bad_unicode_escape() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}
    with pytest.raises(PropertiesSyntaxError, match="malformed"):
        parse_properties("a=\\u12G4\n")


# -- defaults and derivation --------------------------------------------------------------------------------------
def test_kafka_defaults() -> None:
    c = cfg()
    assert c["num.network.threads"] == 3
    assert c["num.io.threads"] == 8
    assert c["queued.max.requests"] == 500
    assert c["socket.request.max.bytes"] == 104857600
    assert c["connections.max.idle.ms"] == 600000
    assert c["max.connections"] == INT_MAX
    assert c["max.connections.per.ip"] == INT_MAX
    assert c["request.timeout.ms"] == 30000
    assert [e.connection_string() for e in c.listeners] == ["PLAINTEXT://:9092"]
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.control_plane_listener_name is None
    assert c.data_plane_listeners == c.listeners
    assert c.protocol_map["SASL_SSL"] == "SASL_SSL"


def test_shipped_broker_properties_has_a_control_plane() -> None:
    c = load_config(REPO / "conf" / "broker.properties")
    assert c.control_plane_listener_name == "CONTROLLER"
    assert [e.name for e in c.data_plane_listeners] == ["PLAINTEXT"]
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.kafka_logs_dir == Path("var/broker-1/logs")
    assert c.metrics_dir == Path("var/broker-1/metrics")


def test_control_plane_derivation_and_listener_overrides() -> None:
    c = raw({
        "listeners": "plaintext://127.0.0.1:0,controller://127.0.0.1:0,REPL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,REPL:PLAINTEXT",
        "inter.broker.listener.name": "repl",
        "control.plane.listener.name": "controller",
        "max.connections": "100",
        "listener.name.plaintext.max.connections": "10",
        "log.dir": "/x/kafka-logs",
    })
    assert c.control_plane_listener_name == "CONTROLLER"
    assert c.inter_broker_listener_name == "REPL"
    assert [e.name for e in c.data_plane_listeners] == ["PLAINTEXT", "REPL"]
    assert c.max_connections_for("PLAINTEXT") == 10
    assert c.max_connections_for("REPL") == 100
    assert c.log_dirs == ["/x/kafka-logs"]  # log.dir fallback
    assert c.kafka_logs_dir == Path("/x/logs")


def test_log_dirs_wins_over_log_dir_and_explicit_dirs() -> None:
    c = raw({"log.dir": "/a/l", "log.dirs": "/b/d1,/b/d2", "kafka.logs.dir": "/logs", "metrics.dir": "/m"})
    assert c.log_dirs == ["/b/d1", "/b/d2"]
    assert c.kafka_logs_dir == Path("/logs")
    assert c.metrics_dir == Path("/m")


def test_security_inter_broker_protocol_picks_the_listener() -> None:
    c = raw({"listeners": "PLAINTEXT://:9092", "security.inter.broker.protocol": "PLAINTEXT"})
    assert c.inter_broker_listener_name == "PLAINTEXT"


def test_planewatch_broker_identity_keys() -> None:
    c = raw({"broker.epoch": "25", "cluster.id": "pw-cluster", "broker.rack": "r1"})
    assert (c["broker.epoch"], c["cluster.id"], c["broker.rack"]) == ("25", "pw-cluster", "r1")
    assert cfg()["broker.epoch"] == "-1"
    assert c.unknown == []


def test_state_change_logger_level_defaults_to_info_and_takes_log4j_levels() -> None:
    assert cfg()["state.change.logger.level"] == "INFO"
    assert raw({"state.change.logger.level": "TRACE"})["state.change.logger.level"] == "TRACE"
    with pytest.raises(ConfigException) as info:
        raw({"state.change.logger.level": "LOUD"})
    assert "state.change.logger.level" in str(info.value)


def test_unknown_keys_are_kept_for_the_warning() -> None:
    c = raw({"no.such.key": "1", "listener.name.plaintext.max.connections": "5"})
    assert c.unknown == ["no.such.key"]


def test_overrides_parse() -> None:
    assert parse_overrides(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ConfigException, match="expected key=value"):
        parse_overrides(["novalue"])


# -- validation messages name the key ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"num.io.threads": "0"}, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        ({"num.network.threads": "x"},
         "Invalid value x for configuration num.network.threads: Not a number of type INT"),
        ({"queued.max.requests": "0"}, "configuration queued.max.requests: Value must be at least 1"),
        ({"max.connections": "-1"}, "configuration max.connections: Value must be at least 0"),
        ({"socket.request.max.bytes": "99999999999"}, "configuration socket.request.max.bytes: Not a number"),
        ({"listener.name.plaintext.max.connections": "-2"},
         "configuration listener.name.plaintext.max.connections: Value must be at least 0"),
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "Each listener must have a different name"),
        ({"listeners": "PLAINTEXT://:9092,REPL://:9092",
          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPL:PLAINTEXT"},
         "Each listener must have a different port"),
        ({"listeners": "FOO://:9092"}, "No security protocol defined for listener FOO"),
        ({"listeners": "garbage"}, "configuration listeners: Unable to parse garbage to a broker endpoint"),
        ({"listener.security.protocol.map": "PLAINTEXT"},
         "listener.security.protocol.map: Map entry should be of form"),
        ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "No enum constant SecurityProtocol.TLS"),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "cannot use the nonroutable meta-address 0.0.0.0"),
        ({"advertised.listeners": "SSL://h:9093"},
         "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"),
        ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
         "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
        ({"inter.broker.listener.name": "NOPE"},
         "Listener with name NOPE defined in inter.broker.listener.name not found in listener.security.protocol.map."),
        ({"inter.broker.listener.name": "SSL"},
         "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
        ({"security.inter.broker.protocol": "BOGUS"},
         "configuration security.inter.broker.protocol: String must be one"),
        ({"control.plane.listener.name": "NOPE"},
         "Listener with NOPE defined in control.plane.listener.name not found in listener.security.protocol.map."),
        ({"control.plane.listener.name": "SSL"},
         "control.plane.listener.name must be a listener name defined in advertised.listeners"),
        ({"control.plane.listener.name": "PLAINTEXT"},
         "control.plane.listener.name, when defined, should have a different value from the inter broker listener "
         "name. Currently they both have the value PLAINTEXT"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9093"},
         "listener SSL uses security protocol SSL, which is not supported by the reference broker"),
        ({"max.connections.per.ip": "0"},
         "max.connections.per.ip.overrides must be set if max.connections.per.ip is set to zero"),
        ({"max.connections.per.ip.overrides": "127.0.0.1:x"}, "configuration max.connections.per.ip.overrides"),
        ({"listener.name.repl.max.connections": "5"}, "listener.name.repl.max.connections is set for listener REPL"),
        ({"broker.id": "-1"}, "configuration broker.id"),
    ],
)
def test_validation_errors_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException) as info:
        raw(props)
    assert message in str(info.value)


def test_ip_overrides_parse() -> None:
    c = raw({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5, myhost:2"})
    assert c.max_connections_per_ip_overrides == {"127.0.0.1": 5, "myhost": 2}


def test_load_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigException, match="Cannot read configuration file"):
        load_config(tmp_path / "missing.properties")
    p = tmp_path / "b.properties"
    p.write_text("broker.id=1\nnum.io.threads=2\n")
    assert load_config(p, ["num.io.threads=5"])["num.io.threads"] == 5


def test_cli_bad_config_exits_non_zero(tmp_path: Path) -> None:
    p = tmp_path / "bad.properties"
    p.write_text("broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nnum.io.threads=0\n")
    out = subprocess.run(
        [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(p)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert out.returncode == 1
    assert "Invalid value 0 for configuration num.io.threads" in out.stderr


def test_cli_runs_and_prints_listeners(tmp_path: Path) -> None:
    p = tmp_path / "ok.properties"
    p.write_text(
        "broker.id=3\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"control.plane.listener.name=CONTROLLER\nlog.dirs={tmp_path}/data\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(p), "--seconds", "0.5"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("listener PLAINTEXT" in ln and "data-plane" in ln for ln in lines), out.stdout
    assert any("listener CONTROLLER" in ln and "control-plane" in ln for ln in lines), out.stdout
    server_log = (tmp_path / "logs" / "server.log").read_text()
    assert "INFO [KafkaServer id=3] started (kafka.server.KafkaServer)" in server_log
    assert "INFO [KafkaServer id=3] shut down completed (kafka.server.KafkaServer)" in server_log
    assert "Awaiting socket connections on 127.0.0.1:" in server_log
