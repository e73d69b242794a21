"""The controller side against a real broker on 127.0.0.1: channel manager, request batches, `planewatch control`."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from broker.config import KafkaConfig, load_config
from broker.controller import BrokerNode, ControllerChannelManager, ControlRequestSender, select_control_endpoint
from broker.controller.channel import ControlResponse, with_correlation_id
from broker.controller.requests import endpoints_of, parse_partitions, scala_set
from broker.log4j import Log4j
from broker.metrics.registry import Gauge, Histogram, MetricsRegistry
from broker.protocol import ApiKey
from broker.server import KafkaServer
from broker.state.model import CachedPartition, LeaderAndIsrPartition, StopReplicaPartition
from planewatch.cli import main as cli_main
from tests.polling import threads_since, wait_until

TS = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_props(path: Path, data_port: int, ctrl_port: int | None) -> Path:
    listeners = f"PLAINTEXT://127.0.0.1:{data_port}"
    protos = "PLAINTEXT:PLAINTEXT"
    extra = ""
    if ctrl_port is not None:
        listeners += f",CONTROLLER://127.0.0.1:{ctrl_port}"
        protos += ",CONTROLLER:PLAINTEXT"
        extra = "control.plane.listener.name=CONTROLLER\n"
    path.write_text(f"broker.id=1\nlisteners={listeners}\nadvertised.listeners={listeners}\n"
                    f"listener.security.protocol.map={protos}\ninter.broker.listener.name=PLAINTEXT\n{extra}"
                    f"log.dirs={path.parent / 'data'}\nmetrics.interval.ms=60000\nnum.io.threads=2\n"
                    "num.network.threads=1\n")
    return path


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[KafkaServer, Path]]:
    props = write_props(tmp_path / "broker.properties", free_port(), free_port())
    with running(load_config(props)) as server:
        yield server, props


class running:
    """Start a real KafkaServer (with broker.apis.KafkaApis) and make sure its threads are gone afterwards."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.before = set(threading.enumerate())
        self.server = KafkaServer(config)

    def __enter__(self) -> KafkaServer:
        self.server.startup()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        wait_until(lambda: not threads_since(self.before), 10,
                   lambda: f"the server's threads to end (still alive: {threads_since(self.before)})", interval=0.05)


def read(server: KafkaServer, name: str) -> str:
    server.log4j.flush()
    return (server.config.kafka_logs_dir / name).read_text()


def lai(partitions: range, *, leader: int = 1, epoch: int = 3,
        controller_epoch: int = 5) -> list[LeaderAndIsrPartition]:
    return [LeaderAndIsrPartition("t", p, controller_epoch, leader, epoch, (1,), 0, (1,)) for p in partitions]


# ------------------------------------------------------------------------------------------------------ pure helpers

def test_kip_291_endpoint_selection() -> None:
    adv = {"PLAINTEXT": ("h", 9092), "CONTROLLER": ("h", 9093)}
    assert select_control_endpoint(1, adv, "CONTROLLER", "PLAINTEXT") == BrokerNode(1, "h", 9093, "CONTROLLER")
    assert select_control_endpoint(1, adv, None, "PLAINTEXT") == BrokerNode(1, "h", 9092, "PLAINTEXT")
    # a broker that does not advertise the control listener (older broker): the inter-broker listener
    assert select_control_endpoint(2, {"PLAINTEXT": ("h", 1)}, "CONTROLLER", "PLAINTEXT").port == 1
    with pytest.raises(ValueError, match="advertises neither"):
        select_control_endpoint(3, {"OTHER": ("h", 1)}, "CONTROLLER", "PLAINTEXT")
    assert str(BrokerNode(2, "127.0.0.1", 9093)) == "127.0.0.1:9093 (id: 2 rack: null)"


def test_partition_lists_and_scala_sets() -> None:
    assert parse_partitions("0-3,7, 9") == [0, 1, 2, 3, 7, 9]
    with pytest.raises(ValueError, match="bad partition"):
        parse_partitions("3-1")
    assert scala_set([2, 1]) == "HashSet(1, 2)"
    assert scala_set([]) == "HashSet()"


# ------------------------------------------------------------------------------------------------------ channel

def test_channel_sends_in_order_one_in_flight_and_writes_controller_lines(
        broker: tuple[KafkaServer, Path], tmp_path: Path) -> None:
    server, _ = broker
    ctrl = server.bound_port("CONTROLLER")
    data = server.bound_port("PLAINTEXT")
    log4j = Log4j().configure(tmp_path / "controller-logs", state_change_level="TRACE", controller_log=True)
    try:
        registry = MetricsRegistry()
        with ControllerChannelManager(1, 5, log4j=log4j, request_timeout_ms=5000, registry=registry) as channel:
            channel.add_broker(BrokerNode(1, "127.0.0.1", ctrl, "CONTROLLER"))
            sender = ControlRequestSender(channel)
            received: list[int] = []
            lock = threading.Lock()

            def note(resp: ControlResponse) -> None:
                with lock:
                    received.append(resp.correlation_id)

            futures: list[Future[ControlResponse]] = [
                sender.send_leader_and_isr(1, 5, lai(range(10)), live_leaders=[BrokerNode(1, "127.0.0.1", data)],
                                           callback=note)]
            live = [endpoints_of(1, {"PLAINTEXT": ("127.0.0.1", data), "CONTROLLER": ("127.0.0.1", ctrl)})]
            cached = [CachedPartition("t", p, 5, 1, 3, (1,), 0, (1,)) for p in range(10)]
            futures += sender.send_update_metadata([1], 7, cached, live, callback=note).values()
            futures += sender.send_stop_replica(1, 1, [StopReplicaPartition("t", 9, -1, True),
                                                       StopReplicaPartition("t", 8, -1, False)], callback=note)
            futures += sender.send_stop_replica(1, 3, [StopReplicaPartition("t", 7, 4, True)], callback=note)
            results = [f.result(timeout=20) for f in futures]
            mbean = "kafka.controller:type=ControllerChannelManager,name={},broker-id=1"
            queue_time = registry.get(mbean.format("RequestRateAndQueueTimeMs"))
            assert isinstance(queue_time, Histogram)
            assert queue_time.count == 5
            size = registry.get(mbean.format("QueueSize"))
            assert isinstance(size, Gauge)
            assert size.value() == 0.0
        assert registry.get(mbean.format("QueueSize")) is None  # removed with the broker
        total = registry.get("kafka.controller:type=ControllerChannelManager,name=TotalQueueSize")
        assert isinstance(total, Gauge)
        assert total.value() == 0.0
    finally:
        log4j.close()
    assert [r.correlation_id for r in results] == [0, 1, 2, 3, 4]
    assert received == [0, 1, 2, 3, 4]  # FIFO, one at a time
    assert [r.body["error_code"] for r in results] == [0, 0, 0, 0, 0]
    assert [e["error_code"] for t in results[0].body["topics"] for e in t["partition_errors"]] == [0] * 10
    # the broker saw them in that order, on its control listener
    state = read(server, "state-change.log")
    events = re.findall(r"Handling (LeaderAndIsr|StopReplica) request correlationId (\d+)|metadata cache in response "
                        r"to (UpdateMetadata) request sent by controller 1 epoch 5 with correlation id (\d+)", state)
    assert [(a or c, int(b or d)) for a, b, c, d in events] == [
        ("LeaderAndIsr", 0), ("UpdateMetadata", 1), ("StopReplica", 2), ("StopReplica", 3), ("StopReplica", 4)]
    request_log = read(server, "kafka-request.log")
    assert '"requestApiKeyName":"LEADER_AND_ISR"' in request_log
    assert re.search(r'"requestApiKeyName":"LEADER_AND_ISR".*"listener":"CONTROLLER"', request_log)
    # controller-side state-change lines (Kafka 2.8, the reference controller writes TRACE too)
    text = (tmp_path / "controller-logs" / "state-change.log").read_text()
    node = f"127.0.0.1:{ctrl} (id: 1 rack: null)"
    for line in [
        "TRACE [Controller id=1 epoch=5] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState("
        "topicName='t', partitionIndex=0, controllerEpoch=5, leader=1, leaderEpoch=3, isr=[1], zkVersion=0, "
        "replicas=[1], addingReplicas=[], removingReplicas=[], isNew=false) to broker 1 for partition t-0",
        "INFO [Controller id=1 epoch=5] Sending LeaderAndIsr request to broker 1 with 10 become-leader and 0 "
        "become-follower partitions",
        "INFO [Controller id=1 epoch=5] Sending UpdateMetadata request to brokers HashSet(1) for 10 partitions",
        "INFO [Controller id=1 epoch=5] Sending StopReplica request (delete = true) for 1 replicas to broker 1",
        "INFO [Controller id=1 epoch=5] Sending StopReplica request (delete = false) for 1 replicas to broker 1",
        "INFO [Controller id=1 epoch=5] Sending StopReplica request for 1 replicas to broker 1",
        "TRACE [Controller id=1 epoch=5] Sending StopReplica request StopReplicaPartitionState(partitionIndex=7, "
        "leaderEpoch=4, deletePartition=true) to broker 1 for partition t-7",
        f"TRACE [Controller id=1 epoch=5] Received response UpdateMetadataResponseData(errorCode=0) for request "
        f"UPDATE_METADATA with correlation id 1 sent to broker {node}",
        f"TRACE [Controller id=1 epoch=5] Received response StopReplicaResponseData(errorCode=0, partitionErrors=["
        f"StopReplicaPartitionError(topicName='t', partitionIndex=9, errorCode=0)]) for request STOP_REPLICA with "
        f"correlation id 2 sent to broker {node}",
    ]:
        assert re.search("^" + TS + " " + re.escape(line) + r" \(state\.change\.logger\)$", text, re.M), line
    assert re.search(r"Received response LeaderAndIsrResponseData\(errorCode=0, partitionErrors=\[\], topics=\["
                     r"LeaderAndIsrTopicError\(topicId=AAAAAAAAAAAAAAAAAAAAAA, partitionErrors=\[LeaderAndIsr"
                     r"PartitionError\(topicName='', partitionIndex=0, errorCode=0\)", text)
    controller_log = (tmp_path / "controller-logs" / "controller.log").read_text()
    assert (f"INFO [RequestSendThread controllerId=1] Controller 1 connected to {node} for sending state change "
            "requests (kafka.controller.RequestSendThread)") in controller_log


def test_channel_gives_up_at_the_deadline_and_retries_until_the_broker_appears(tmp_path: Path) -> None:
    log4j = Log4j().configure(tmp_path / "c", controller_log=True)
    port = free_port()
    try:
        with ControllerChannelManager(1, 5, log4j=log4j, request_timeout_ms=2000) as channel:
            channel.add_broker(BrokerNode(1, "127.0.0.1", port))
            sender = ControlRequestSender(channel)
            doomed = sender.send_leader_and_isr(1, 2, lai(range(1)), timeout_ms=300)
            with pytest.raises(TimeoutError):
                doomed.result(timeout=10)
            # now retry without a deadline while the broker is down; start it: the request gets through
            pending = sender.send_leader_and_isr(1, 2, lai(range(2)))
            time.sleep(0.3)
            assert not pending.done()
            props = write_props(tmp_path / "b.properties", port, None)
            with running(load_config(props)) as server:
                resp = pending.result(timeout=20)
                assert resp.body["error_code"] == 0
                assert len(server.apis.state.partitions()) == 2  # type: ignore[union-attr]
    finally:
        log4j.close()
    text = (tmp_path / "c" / "controller.log").read_text()
    assert f"WARN [RequestSendThread controllerId=1] Controller 1's connection to broker 127.0.0.1:{port} (id: 1 " \
           "rack: null) was unsuccessful" in text


# ------------------------------------------------------------------------------------------------------ the CLI

def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = cli_main(["control", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_leader_and_isr_stale_epoch_update_metadata_stop_replica(
        broker: tuple[KafkaServer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server, props = broker
    ctrl = server.bound_port("CONTROLLER")
    logs = str(tmp_path / "ctl")
    common = ["--controller-id", "1", "--topic", "t", "--partitions", "0-9", "--logs-dir", logs]
    rc, out, err = run_cli(["leader-and-isr", "--bootstrap", f"127.0.0.1:{ctrl}", "--controller-epoch", "5",
                            "--leader", "1", "--leader-epoch", "3", "--isr", "1", "--replicas", "1", *common], capsys)
    assert rc == 0, err
    assert "LeaderAndIsr v5 -> broker 1" in out
    assert "error codes NONE(0)" in out
    assert '"errorCode": 0' in out
    rc, out, _ = run_cli(["leader-and-isr", "--bootstrap", f"127.0.0.1:{ctrl}", "--controller-epoch", "4",
                          "--leader", "1", "--leader-epoch", "4", "--isr", "1", "--replicas", "1", "--version", "2",
                          *common], capsys)
    assert rc == 0
    assert "STALE_CONTROLLER_EPOCH(11)" in out
    # --broker-config: KIP-291 routing to the control listener
    rc, out, err = run_cli(["update-metadata", "--broker-config", str(props), "--controller-epoch", "5",
                            "--leader", "1", "--leader-epoch", "3", "--isr", "1", "--replicas", "1", *common], capsys)
    assert rc == 0, err
    assert f"UpdateMetadata v7 -> broker 1 at 127.0.0.1:{ctrl} (CONTROLLER)" in out
    rc, out, _ = run_cli(["stop-replica", "--broker-config", str(props), "--controller-epoch", "5", "--delete",
                          "--leader-epoch", "-2", "--controller-id", "1", "--topic", "t", "--partitions", "9",
                          "--logs-dir", logs], capsys)
    assert rc == 0
    assert "StopReplica v3" in out
    assert "error codes NONE(0)" in out
    assert len(server.apis.state.partitions()) == 9  # type: ignore[union-attr]
    state = read(server, "state-change.log")
    assert re.search(TS + r" INFO \[Broker id=1\] Handling LeaderAndIsr request correlationId 0 from controller 1 "
                     r"for 10 partitions \(state\.change\.logger\)", state)
    assert "Add 10 partitions and deleted 0 partitions from metadata cache" in state
    ctl_state = (tmp_path / "ctl" / "state-change.log").read_text()
    assert "Sending LeaderAndIsr request to broker 1 with 10 become-leader and 0 become-follower" in ctl_state
    assert "[Controller id=1 epoch=4] Received response LeaderAndIsrResponseData(errorCode=11" in ctl_state


def test_cli_broker_epoch(broker: tuple[KafkaServer, Path], tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    server, props = broker
    server.apis.state.set_broker_epoch(40)  # type: ignore[union-attr]
    base = ["--broker-config", str(props), "--controller-epoch", "5", "--topic", "t", "--partitions", "0",
            "--leader", "1", "--leader-epoch", "1", "--isr", "1", "--replicas", "1", "--logs-dir", str(tmp_path)]
    _, out, _ = run_cli(["leader-and-isr", *base, "--broker-epoch", "39"], capsys)
    assert "STALE_BROKER_EPOCH(77)" in out
    _, out, _ = run_cli(["leader-and-isr", *base, "--broker-epoch", "40"], capsys)
    assert "error codes NONE(0)" in out
    _, out, _ = run_cli(["update-metadata", *base, "--max-broker-epoch", "39"], capsys)
    assert "STALE_BROKER_EPOCH(77)" in out


def test_cli_without_control_listener_uses_the_inter_broker_listener(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = free_port()
    props = write_props(tmp_path / "p.properties", data, None)
    with running(load_config(props)):
        rc, out, err = run_cli(["stop-replica", "--broker-config", str(props), "--controller-epoch", "1",
                                "--topic", "t", "--partitions", "0", "--logs-dir", str(tmp_path / "l")], capsys)
    assert rc == 0, err
    assert f"-> broker 1 at 127.0.0.1:{data} (PLAINTEXT)" in out


def test_cli_transport_error_and_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args: list[str] = ["leader-and-isr", "--bootstrap", f"127.0.0.1:{free_port()}", "--broker-id", "1",
                       "--controller-epoch", "1", "--topic", "t", "--partitions", "0", "--leader", "1",
                       "--leader-epoch", "1", "--isr", "1", "--replicas", "1", "--timeout-ms", "300",
                       "--logs-dir", str(tmp_path)]
    rc, _, err = run_cli(args, capsys)
    assert rc == 1
    assert "transport error" in err
    no_id = [a for i, a in enumerate(args) if a != "--broker-id" and args[i - 1] != "--broker-id"]
    rc, _, err = run_cli(no_id, capsys)  # the broker id cannot be discovered either
    assert rc == 1
    assert "transport error asking" in err
    rc, _, err = run_cli([*args[:-2], "--version", "9", "--logs-dir", str(tmp_path)], capsys)
    assert rc == 2
    assert "version must be 0-7" in err
    bad: Any = [*args]
    bad[bad.index("--partitions") + 1] = "x-y"
    rc, _, err = run_cli(bad, capsys)
    assert rc == 2
    assert "bad partition list" in err


def test_api_key_constants() -> None:
    assert (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA) == (4, 5, 6)


def test_shared_update_metadata_payload_is_serialized_once(broker: tuple[KafkaServer, Path], tmp_path: Path) -> None:
    server, _ = broker
    ctrl = server.bound_port("CONTROLLER")
    server.apis.state.set_broker_epoch(40)  # type: ignore[union-attr]
    frame = b"\x00\x00\x00\x09\x00\x06\x00\x07\x00\x00\x00\x00\xff"
    assert with_correlation_id(frame, 258) == frame[:8] + b"\x00\x00\x01\x02\xff"
    log4j = Log4j().configure(tmp_path / "c")
    try:
        with ControllerChannelManager(1, 5, log4j=log4j) as channel:
            # two broker ids, one real broker behind both: each send thread patches its own correlation ids
            channel.add_broker(BrokerNode(1, "127.0.0.1", ctrl, "CONTROLLER"))
            channel.add_broker(BrokerNode(2, "127.0.0.1", ctrl, "CONTROLLER"))
            sender = ControlRequestSender(channel)
            cached = [CachedPartition("t", 0, 5, 1, 3, (1,), 0, (1,))]
            live = [endpoints_of(1, {"PLAINTEXT": ("127.0.0.1", server.bound_port("PLAINTEXT"))})]
            first = sender.send_update_metadata([1, 2], 7, cached, live, max_broker_epoch=40)
            second = sender.send_update_metadata([1, 2], 7, cached, live, max_broker_epoch=39)
            results = {(b, f.result(20).correlation_id, f.result(20).body["error_code"])
                       for fs in (first, second) for b, f in fs.items()}
    finally:
        log4j.close()
    assert results == {(1, 0, 0), (2, 0, 0), (1, 1, 77), (2, 1, 77)}


class BlackHole:
    """A listener on 127.0.0.1 that accepts connections, reads, and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for c in self.accepted:
            c.close()
        self.sock.close()


def test_unanswered_requests_are_resent_and_shutdown_does_not_hang(tmp_path: Path) -> None:
    hole = BlackHole()
    log4j = Log4j().configure(tmp_path, controller_log=True)
    before = set(threading.enumerate())
    retrying = ControllerChannelManager(1, 5, log4j=log4j, request_timeout_ms=200)
    patient = ControllerChannelManager(1, 5, log4j=log4j, request_timeout_ms=60_000)
    try:
        retrying.add_broker(BrokerNode(1, "127.0.0.1", hole.port))
        fut = ControlRequestSender(retrying).send_leader_and_isr(1, 5, lai(range(1)))
        # request.timeout.ms passed: reconnect and resend, as Kafka does
        wait_until(lambda: len(hole.accepted) >= 2, 10, "a second connection (the resend)", interval=0.02)
        assert not fut.done()
        patient.add_broker(BrokerNode(1, "127.0.0.1", hole.port))
        stuck = ControlRequestSender(patient).send_leader_and_isr(1, 5, lai(range(1)))
        time.sleep(0.3)
        started = time.monotonic()
        patient.shutdown()
        assert time.monotonic() - started < 3  # the blocked recv is woken, not waited out
        with pytest.raises(ConnectionError):
            stuck.result(timeout=5)
    finally:
        retrying.shutdown()
        patient.shutdown()
        log4j.close()
        hole.close()
    with pytest.raises(ConnectionError):
        fut.result(timeout=5)
    text = (tmp_path / "controller.log").read_text()
    assert ("WARN [RequestSendThread controllerId=1] Controller 1 epoch 5 fails to send request (type=LeaderAndIsr"
            "Request, version=5, correlationId=0) to broker") in text
    assert "Reconnecting to broker." in text
    assert not [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
