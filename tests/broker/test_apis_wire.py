"""An independent cross-check: control requests hand-encoded from the public schemas (no broker.protocol), sent over
127.0.0.1 to a real broker built by broker.apis.factory (broker.epoch / cluster.id from properties)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.apis.factory import build_kafka_apis
from broker.config import load_config
from broker.log4j import Log4j
from broker.server import KafkaServer
from tests.polling import threads_since, wait_until


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def array(items: list[Any], enc: Callable[[Any], bytes]) -> bytes:
    return i32(len(items)) + b"".join(enc(x) for x in items)


class Reader:
    def __init__(self, b: bytes) -> None:
        self.b, self.p = b, 0

    def take(self, n: int) -> bytes:
        assert self.p + n <= len(self.b), "short response"
        v = self.b[self.p:self.p + n]
        self.p += n
        return v

    def i16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def i32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def string(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def array(self, dec: Callable[[Reader], Any]) -> list[Any]:
        n = self.i32()
        return [dec(self) for _ in range(max(n, 0))]

    def done(self) -> bool:
        return self.p == len(self.b)


class Wire:
    """Request header v1 (int16 client id), non-flexible bodies only."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.corr = 100

    def call(self, api_key: int, version: int, body: bytes) -> Reader:
        self.corr += 1
        msg = i16(api_key) + i16(version) + i32(self.corr) + string("wire-check") + body
        self.sock.sendall(i32(len(msg)) + msg)
        size = struct.unpack(">i", self._exactly(4))[0]
        r = Reader(self._exactly(size))
        assert r.i32() == self.corr
        return r

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "closed by broker"
            buf += chunk
        return buf


def partition_state(p: int, leader_epoch: int, with_offline: bool) -> bytes:
    # PartitionIndex, ControllerEpoch, Leader, LeaderEpoch, Isr, ZkVersion, Replicas, (IsNew | OfflineReplicas)
    out = i32(p) + i32(5) + i32(1) + i32(leader_epoch) + array([1], i32) + i32(0) + array([1], i32)
    return out + (array([], i32) if with_offline else b"\x00")


def leader_and_isr_v2(broker_epoch: int, leader_epoch: int, parts: list[int]) -> bytes:
    topic = string("wire") + array(parts, lambda p: partition_state(p, leader_epoch, False))
    return (i32(1) + i32(5) + i64(broker_epoch) + array([topic], lambda t: t)
            + array([(1, "127.0.0.1", 9092)], lambda x: i32(x[0]) + string(x[1]) + i32(x[2])))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[KafkaServer]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    props = tmp_path / "b.properties"
    props.write_text(f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path}/data\n"
                     "metrics.interval.ms=60000\nnum.io.threads=1\nnum.network.threads=1\n")
    config = load_config(props, ["broker.epoch=40", "cluster.id=wire-cluster"])
    before = set(threading.enumerate())
    srv = KafkaServer(config, build_kafka_apis)
    srv.startup()
    try:
        yield srv
    finally:
        srv.shutdown()
        wait_until(lambda: not threads_since(before), 10,
                   lambda: f"the server's threads to end (still alive: {threads_since(before)})", interval=0.05)


def test_hand_encoded_control_requests(server: KafkaServer) -> None:
    w = Wire(server.bound_port("PLAINTEXT"))
    # LeaderAndIsr v2 with a stale broker epoch (broker.epoch=40 from --override): 77 for all
    r = w.call(4, 2, leader_and_isr_v2(39, 3, [0, 1]))
    assert (r.i16(), r.array(lambda x: (x.string(), x.i32(), x.i16()))) == (77, [("wire", 0, 77), ("wire", 1, 77)])
    assert r.done()
    r = w.call(4, 2, leader_and_isr_v2(40, 3, [0, 1]))
    assert (r.i16(), r.array(lambda x: (x.string(), x.i32(), x.i16()))) == (0, [("wire", 0, 0), ("wire", 1, 0)])
    # UpdateMetadata v5: one topic, one live broker with a PLAINTEXT endpoint
    port = server.bound_port("PLAINTEXT")
    endpoint = i32(port) + string("127.0.0.1") + string("PLAINTEXT") + i16(0)
    live = i32(1) + array([endpoint], lambda e: e) + string(None)
    um = (i32(1) + i32(5) + i64(-1) + array([string("wire") + array([0, 1], lambda p: partition_state(p, 3, True))],
                                             lambda t: t) + array([live], lambda b: b))
    r = w.call(6, 5, um)
    assert r.i16() == 0
    assert r.done()
    # Metadata v2 (has ClusterId): cluster.id from the properties, the topic from the cache
    r = w.call(3, 2, array(["wire", "missing"], string))
    brokers = r.array(lambda x: (x.i32(), x.string(), x.i32(), x.string()))
    assert brokers == [(1, "127.0.0.1", port, None)]
    assert r.string() == "wire-cluster"
    assert r.i32() == 1  # controller id

    def part(x: Reader) -> tuple[int, int, int, list[int], list[int]]:
        return x.i16(), x.i32(), x.i32(), x.array(lambda y: y.i32()), x.array(lambda y: y.i32())

    topics = r.array(lambda x: (x.i16(), x.string(), x.take(1), x.array(part)))
    assert [(t[0], t[1], [p[:3] for p in t[3]]) for t in topics] == [(0, "wire", [(0, 0, 1), (0, 1, 1)]),
                                                                      (3, "missing", [])]
    assert r.done()
    # StopReplica v1, delete: partitions removed from the broker's state
    sr = i32(1) + i32(5) + i64(41) + b"\x01" + array([string("wire") + array([1], i32)], lambda t: t)
    r = w.call(5, 1, sr)
    assert (r.i16(), r.array(lambda x: (x.string(), x.i32(), x.i16()))) == (0, [("wire", 1, 0)])
    state: Any = server.apis.state  # type: ignore[union-attr]
    assert sorted(tp.partition for tp in state.partitions()) == [0]
    assert state.broker_epoch == 40
    server.log4j.flush()
    server_log = (server.config.kafka_logs_dir / "server.log").read_text()
    assert "[KafkaApi-1] Received LeaderAndIsr request with broker epoch 39 smaller than the current broker epoch " \
           "40 (kafka.server.KafkaApis)" in server_log
    assert "DEBUG [ReplicaManager broker=1] LeaderAndIsr correlationId 102 waited 0 ms for replicaStateChangeLock " \
           "(planewatch) (kafka.server.ReplicaManager)" in server_log


def test_bad_broker_epoch_setting_names_the_key(tmp_path: Path) -> None:
    props = tmp_path / "b.properties"
    props.write_text(f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs={tmp_path}/data\n")

    class FakeServer:
        config = load_config(props, ["broker.epoch=soon"])
        log4j = Log4j()

        def advertised_listeners(self) -> list[Any]:
            return []

    with pytest.raises(ValueError, match=r"Invalid value soon for configuration broker\.epoch"):
        build_kafka_apis(FakeServer())


def test_confluent_kafka_sees_the_metadata_fed_by_update_metadata(server: KafkaServer) -> None:
    """An independent real client (librdkafka): Metadata after an UpdateMetadata sent by the controller side."""
    from confluent_kafka.admin import AdminClient

    from broker.controller import BrokerNode, ControllerChannelManager, ControlRequestSender
    from broker.controller.requests import endpoints_of
    from broker.state.model import CachedPartition

    port = server.bound_port("PLAINTEXT")
    with ControllerChannelManager(1, 5, log4j=Log4j()) as channel:
        channel.add_broker(BrokerNode(1, "127.0.0.1", port))
        cached = [CachedPartition("lib-topic", p, 5, 1, 3, (1,), 0, (1,)) for p in range(4)]
        live = [endpoints_of(1, {"PLAINTEXT": ("127.0.0.1", port)})]
        futures = ControlRequestSender(channel).send_update_metadata([1], 7, cached, live, broker_epochs={1: 40})
        assert futures[1].result(20).body["error_code"] == 0
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "socket.timeout.ms": 5000})
    md = admin.list_topics(timeout=10)
    assert md.cluster_id == "wire-cluster"
    assert md.controller_id == 1
    assert sorted(md.topics["lib-topic"].partitions) == [0, 1, 2, 3]
    assert {p.leader for p in md.topics["lib-topic"].partitions.values()} == {1}
    assert [(b.id, str(b.host), b.port) for b in md.brokers.values()] == [(1, "127.0.0.1", port)]
    # and kafka-python (pure Python, its own protocol classes)
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=10_000)
    try:
        assert consumer.partitions_for_topic("lib-topic") == {0, 1, 2, 3}
    finally:
        consumer.close()
