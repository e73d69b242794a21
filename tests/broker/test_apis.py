"""KafkaApis on frames built by the codec (no sockets): every API and version, error codes, state, log lines."""

from __future__ import annotations

import re
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.apis import HandlerResult, KafkaApis
from broker.log4j import Log4j
from broker.network.request import Request, Response
from broker.protocol import (
    MAX_BROKER_EPOCH_TAG,
    ApiKey,
    CorruptRequest,
    RequestHeader,
    decode_response,
    encode_request,
    parse_request_header,
)
from broker.state import BrokerState, Role, TopicPartition
from broker.state.model import BrokerEndPoint, InitialFetchState, NullFetcherManager

CONTROL = "CONTROLLER"
DATA = "PLAINTEXT"
TS = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]"
assert MAX_BROKER_EPOCH_TAG == 100


class Broker:
    """One KafkaApis with its state and logs, plus helpers that speak to it through frames."""

    def __init__(self, logs: Path, *, trace: bool = False, fetcher: Any = None) -> None:
        self.logs = logs
        self.log4j = Log4j().configure(logs, state_change_level="TRACE" if trace else "INFO")
        self.state = BrokerState(1, log4j=self.log4j, fetcher_manager=fetcher)
        listeners = {DATA: ("127.0.0.1", 9092), CONTROL: ("127.0.0.1", 9093)}
        self.apis = KafkaApis(self.state, advertised_listeners=listeners, cluster_id="pw-cluster", log4j=self.log4j)
        self.corr = 0
        self.lock = threading.Lock()

    def close(self) -> None:
        self.log4j.close()

    def send(self, api_key: int, version: int, body: dict[str, Any], listener: str = CONTROL) -> Response:
        with self.lock:
            self.corr += 1
            corr = self.corr
        frame = encode_request(api_key, version, corr, "1", body)[4:]
        return self.apis.handle(raw_request(frame, listener))

    def call(self, api_key: int, version: int, body: dict[str, Any], listener: str = CONTROL) -> dict[str, Any]:
        resp = self.send(api_key, version, body, listener)
        assert resp.frame is not None
        assert not resp.close
        _, out = decode_response(api_key, version, resp.frame[4:])
        return out

    def text(self, name: str) -> str:
        self.log4j.flush()
        return (self.logs / name).read_text()


def raw_request(frame: bytes, listener: str = CONTROL) -> Request:
    try:
        header = parse_request_header(frame)
    except CorruptRequest:  # the processor would have closed it; KafkaApis must cope anyway
        api_key, version, corr = struct.unpack_from(">hhi", frame)
        header = RequestHeader(api_key, version, corr, None)
    return Request(processor_id=0, connection_id="127.0.0.1:9093-127.0.0.1:50000-0", listener=listener,
                   security_protocol="PLAINTEXT", client_host="127.0.0.1", frame=frame,
                   header=header, start_ns=time.monotonic_ns())


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker(tmp_path)
    yield b
    b.close()


def pstate(partition: int, *, leader: int = 1, leader_epoch: int = 3, isr: list[int] | None = None,
           replicas: list[int] | None = None, controller_epoch: int = 5, topic: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"partition_index": partition, "controller_epoch": controller_epoch, "leader": leader,
                         "leader_epoch": leader_epoch, "isr": isr or [1], "partition_epoch": 0,
                         "zk_version": 0, "replicas": replicas or [1], "adding_replicas": [],
                         "removing_replicas": [], "is_new": False, "offline_replicas": []}
    if topic is not None:
        d["topic_name"] = topic
    return d


def lai_body(version: int, states: list[dict[str, Any]], *, topic: str = "bar", controller_epoch: int = 5,
             broker_epoch: int = -1, topic_id: uuid.UUID | None = None, max_broker_epoch: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = {"controller_id": 1, "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
                            "type": 0, "live_leaders": [{"broker_id": 1, "host_name": "127.0.0.1", "port": 9092}],
                            "max_broker_epoch": max_broker_epoch}
    if version < 2:
        body["ungrouped_partition_states"] = [dict(s, topic_name=topic) for s in states]
    else:
        body["topic_states"] = [{"topic_name": topic, "topic_id": topic_id or uuid.UUID(int=0),
                                 "partition_states": states}]
    return body


def um_body(version: int, states: list[dict[str, Any]], *, topic: str = "bar", controller_epoch: int = 5,
            broker_epoch: int = -1, brokers: tuple[int, ...] = (1,)) -> dict[str, Any]:
    live = []
    for b in brokers:
        eps = [{"port": 9092 + 10 * (b - 1), "host": "127.0.0.1", "listener": DATA, "security_protocol": 0},
               {"port": 9093 + 10 * (b - 1), "host": "127.0.0.1", "listener": CONTROL, "security_protocol": 0}]
        live.append({"id": b, "v0_host": "127.0.0.1", "v0_port": 9092, "endpoints": eps, "rack": None})
    body: dict[str, Any] = {"controller_id": 1, "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
                            "live_brokers": live}
    if version < 5:
        body["ungrouped_partition_states"] = [dict(s, topic_name=topic) for s in states]
    else:
        body["topic_states"] = [{"topic_name": topic, "topic_id": uuid.UUID(int=7), "partition_states": states}]
    return body


def sr_body(version: int, partitions: list[int], *, topic: str = "bar", delete: bool = False, leader_epoch: int = -1,
            controller_epoch: int = 5, broker_epoch: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = {"controller_id": 1, "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
                            "delete_partitions": delete}
    if version == 0:
        body["ungrouped_partitions"] = [{"topic_name": topic, "partition_index": p} for p in partitions]
    elif version <= 2:
        body["topics"] = [{"name": topic, "partition_indexes": partitions}]
    else:
        body["topic_states"] = [{"topic_name": topic, "partition_states": [
            {"partition_index": p, "leader_epoch": leader_epoch, "delete_partition": delete} for p in partitions]}]
    return body


def lai_errors(version: int, resp: dict[str, Any]) -> list[int]:
    if version < 5:
        return [p["error_code"] for p in resp["partition_errors"]]
    return [p["error_code"] for t in resp["topics"] for p in t["partition_errors"]]


# ------------------------------------------------------------------------------------------------------ ApiVersions

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_api_versions_advertises_the_handled_apis(broker: Broker, version: int) -> None:
    body = {"client_software_name": "pw-test", "client_software_version": "1.0"}
    resp = broker.call(ApiKey.API_VERSIONS, version, body)
    assert resp["error_code"] == 0
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}
    assert keys == {18: (0, 3), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8)}


def test_api_versions_v3_with_invalid_software_name_is_invalid_request(broker: Broker) -> None:
    resp = broker.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "-bad name", "client_software_version": "1"})
    assert resp["error_code"] == 42
    assert resp["api_keys"] == []


def test_api_versions_unsupported_version_gets_the_v0_fallback(broker: Broker) -> None:
    frame = encode_request(ApiKey.API_VERSIONS, 4, 99, "c", {"client_software_name": "x",
                                                              "client_software_version": "1"})[4:]
    resp = broker.apis.handle(raw_request(frame))
    assert resp.frame is not None
    assert not resp.close
    corr, body = decode_response(ApiKey.API_VERSIONS, 0, resp.frame[4:])
    assert corr == 99
    assert body["error_code"] == 35
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 3}]
    assert resp.error_codes == (35,)


def test_unknown_api_and_unsupported_version_close_the_connection(broker: Broker) -> None:
    garbage = b"\x7f\xff\x00\x00\x00\x00\x00\x07" + b"\xde\xad\xbe\xef" * 2  # check-broker's garbage frame
    assert broker.apis.handle(raw_request(garbage)).close
    metadata_v13 = encode_request(ApiKey.METADATA, 13, 1, "c", {"topics": None})[4:]
    assert broker.apis.handle(raw_request(metadata_v13, DATA)).close
    truncated = encode_request(ApiKey.LEADER_AND_ISR, 2, 1, "c", lai_body(2, [pstate(0)]))[4:-3]
    assert broker.apis.handle(raw_request(truncated)).close
    # and the broker keeps answering
    assert broker.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0


def test_a_failing_handler_gets_kafkas_error_answer(broker: Broker) -> None:
    def boom(request: Request, header: Any, body: dict[str, Any]) -> HandlerResult:
        raise RuntimeError("boom")

    broker.apis.register(ApiKey.METADATA, boom)
    resp = broker.send(ApiKey.METADATA, 1, {"topics": None}, DATA)
    assert resp.frame is not None
    assert not resp.close
    assert resp.error_codes == (-1,)
    assert "ERROR [KafkaApi-1] Unexpected error handling request RequestHeader(apiKey=METADATA" in broker.text(
        "server.log")
    assert "RuntimeError: boom" in broker.text("server.log")


# ------------------------------------------------------------------------------------------------------ LeaderAndIsr

@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6, 7])
def test_leader_and_isr_every_version(broker: Broker, version: int) -> None:
    tid = uuid.uuid4()
    states = [pstate(p) for p in range(10)]
    resp = broker.send(ApiKey.LEADER_AND_ISR, version, lai_body(version, states, topic_id=tid))
    assert resp.metric_name == "LeaderAndIsr"
    assert resp.error_codes == (0,) * 11
    assert resp.frame is not None
    _, body = decode_response(ApiKey.LEADER_AND_ISR, version, resp.frame[4:])
    assert body["error_code"] == 0
    assert lai_errors(version, body) == [0] * 10
    if version >= 5:
        assert [t["topic_id"] for t in body["topics"]] == [tid]
    hosted = broker.state.partitions()
    assert len(hosted) == 10
    assert all(p.role is Role.LEADER and p.leader_epoch == 3 for p in hosted.values())
    assert broker.state.controller_epoch == 5


def test_leader_and_isr_log_lines_match_kafka_2_8(tmp_path: Path) -> None:
    b = Broker(tmp_path, trace=True)
    try:
        b.call(ApiKey.UPDATE_METADATA, 6, um_body(6, [], brokers=(1, 2)))
        states = [pstate(0, isr=[1, 2], replicas=[1, 2]), pstate(1, leader=2, isr=[2, 1], replicas=[2, 1])]
        b.call(ApiKey.LEADER_AND_ISR, 4, lai_body(4, states))
        text = b.text("state-change.log")
    finally:
        b.close()
    corr = 2
    expected = [
        f"INFO [Broker id=1] Handling LeaderAndIsr request correlationId {corr} from controller 1 for 2 partitions",
        f"TRACE [Broker id=1] Received LeaderAndIsr request LeaderAndIsrPartitionState(topicName='bar', "
        f"partitionIndex=0, controllerEpoch=5, leader=1, leaderEpoch=3, isr=[1, 2], zkVersion=0, replicas=[1, 2], "
        f"addingReplicas=[], removingReplicas=[], isNew=false) correlation id {corr} from controller 1 epoch 5",
        f"TRACE [Broker id=1] Handling LeaderAndIsr request correlationId {corr} from controller 1 epoch 5 starting "
        f"the become-leader transition for partition bar-0",
        f"INFO [Broker id=1] Stopped fetchers as part of LeaderAndIsr request correlationId {corr} from controller 1 "
        f"epoch 5 as part of the become-leader transition for 1 partitions",
        "INFO [Broker id=1] Leader bar-0 starts at leader epoch 3 from offset 0 with high watermark 0 ISR [1,2] "
        "addingReplicas [] removingReplicas []. Previous leader epoch was -1.",
        "INFO [Broker id=1] Follower bar-1 starts at leader epoch 3 from offset 0 with high watermark 0. Previous "
        "leader epoch was -1.",
        f"INFO [Broker id=1] Stopped fetchers as part of become-follower request from controller 1 epoch 5 with "
        f"correlation id {corr} for 1 partitions",
    ]
    for line in expected:
        assert re.search("^" + TS + " " + re.escape(line) + r" \(state\.change\.logger\)$", text, re.M), line
    fin = re.compile("^" + TS + rf" INFO \[Broker id=1\] Finished LeaderAndIsr request in \d+ms correlationId {corr} "
                     r"from controller 1 for 2 partitions \(state\.change\.logger\)$", re.M)
    assert fin.search(text)
    assert re.search(r"Add 0 partitions", text) is None  # no partition states: Kafka writes no summary


def test_stale_controller_epoch_whole_request(broker: Broker) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0)]))
    resp = broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0, leader_epoch=4)], controller_epoch=4))
    assert resp["error_code"] == 11
    assert lai_errors(2, resp) == [11]
    assert broker.state.partitions()[TopicPartition("bar", 0)].leader_epoch == 3
    assert re.search(TS + r" WARN \[Broker id=1\] Ignoring LeaderAndIsr request from controller 1 with correlation "
                     r"id 2 since its controller epoch 4 is old\. Latest known controller epoch is 5 "
                     r"\(state\.change\.logger\)", broker.text("state-change.log"))


def test_per_partition_leader_epoch_staleness(broker: Broker) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(0, leader_epoch=3), pstate(1, leader_epoch=3)]))
    resp = broker.call(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(0, leader_epoch=3), pstate(1, leader_epoch=2),
                                                                  pstate(2, leader_epoch=0)]))
    assert resp["error_code"] == 0
    assert lai_errors(5, resp) == [11, 11, 0]
    text = broker.text("state-change.log")
    assert ("INFO [Broker id=1] Ignoring LeaderAndIsr request from controller 1 with correlation id 2 epoch 5 for "
            "partition bar-0 since its associated leader epoch 3 matches the current leader epoch") in text
    assert ("WARN [Broker id=1] Ignoring LeaderAndIsr request from controller 1 with correlation id 2 epoch 5 for "
            "partition bar-1 since its associated leader epoch 2 is smaller than the current leader epoch 3") in text


class _PausingFetcher(NullFetcherManager):
    """Pauses a LeaderAndIsr mid-apply (inside the state-change lock, before it publishes) until ``go`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.pause = False
        self.entered = threading.Event()
        self.go = threading.Event()

    def remove_fetcher_for_partitions(self, partitions: Any) -> None:
        if self.pause:
            self.entered.set()
            assert self.go.wait(30), "the test never released the LeaderAndIsr"
        super().remove_fetcher_for_partitions(partitions)


def test_an_isr_answer_racing_a_newer_leader_and_isr_is_dropped(tmp_path: Path) -> None:
    """The AlterIsr answer that completes a reassignment can reach the leader while it applies the controller's
    LeaderAndIsr with the finished assignment (new leader epoch, the removed replica out of the ISR). The stale ISR
    must not overwrite it (the high watermark would then wait for the removed replica forever): the leader-epoch
    check and the publish happen under the state-change lock."""
    fetcher = _PausingFetcher()
    b = Broker(tmp_path, fetcher=fetcher)
    tp = TopicPartition("bar", 0)
    try:
        b.call(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(0, leader_epoch=3, isr=[1, 2], replicas=[1, 2, 3])]))
        expanded = b.state.update_led_isr(tp, 3, (1, 2, 3), 1)
        assert expanded is not None
        assert b.state.partitions()[tp].isr == (1, 2, 3)

        fetcher.pause = True
        finished = pstate(0, leader_epoch=4, isr=[1, 3], replicas=[1, 3])
        lai = threading.Thread(target=b.call, args=(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [finished])))
        lai.start()
        assert fetcher.entered.wait(30)
        assert b.state.partitions()[tp].leader_epoch == 3  # mid-apply: epoch 4 is not published yet
        answers: list[object] = []
        isr = threading.Thread(target=lambda: answers.append(b.state.update_led_isr(tp, 3, (1, 2, 3), 2)))
        isr.start()
        isr.join(0.2)
        assert isr.is_alive(), "the ISR update must wait for the LeaderAndIsr in progress"
        fetcher.go.set()
        lai.join(30)
        isr.join(30)
        assert answers == [None]
        now = b.state.partitions()[tp]
        assert (now.leader_epoch, now.isr, now.replicas) == (4, (1, 3), (1, 3))
        assert b.state.update_led_isr(TopicPartition("bar", 9), 4, (1,), 1) is None  # not hosted
    finally:
        fetcher.go.set()
        b.close()


def test_not_in_replica_list_is_unknown_topic_or_partition(broker: Broker) -> None:
    resp = broker.call(ApiKey.LEADER_AND_ISR, 3, lai_body(3, [pstate(0, leader=2, isr=[2, 3], replicas=[2, 3])]))
    assert lai_errors(3, resp) == [3]
    assert "as itself is not in assigned replica list 2,3" in broker.text("state-change.log")


def test_follower_needs_a_live_leader_and_starts_a_fetcher(tmp_path: Path) -> None:
    fetcher = NullFetcherManager()
    b = Broker(tmp_path, fetcher=fetcher)
    try:
        tp = TopicPartition("bar", 0)
        resp = b.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0, leader=2, isr=[2, 1], replicas=[2, 1])]))
        assert lai_errors(2, resp) == [0]  # Kafka answers NONE and logs an ERROR
        assert "but cannot become follower since the new leader 2 is unavailable." in b.text("state-change.log")
        assert fetcher.fetching == {}
        b.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [], brokers=(1, 2)))
        b.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0, leader=2, leader_epoch=4, isr=[2, 1],
                                                             replicas=[2, 1])]))
        assert b.state.partitions()[tp].role is Role.FOLLOWER
        assert fetcher.fetching[tp] == InitialFetchState(BrokerEndPoint(2, "127.0.0.1", 9102), 4, 0)
        # become leader: the fetcher is removed
        b.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0, leader=1, leader_epoch=5, isr=[1, 2],
                                                             replicas=[2, 1])]))
        assert tp not in fetcher.fetching
        assert b.state.partitions()[tp].role is Role.LEADER
    finally:
        b.close()


# ------------------------------------------------------------------------------------------------------ broker epoch

def test_stale_broker_epoch(broker: Broker) -> None:
    broker.state.set_broker_epoch(10)
    resp = broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0), pstate(1)], broker_epoch=9))
    assert resp["error_code"] == 77
    assert lai_errors(2, resp) == [77, 77]
    assert broker.state.partitions() == {}
    assert re.search("^" + TS + r" INFO \[KafkaApi-1\] Received LeaderAndIsr request with broker epoch 9 smaller "
                     r"than the current broker epoch 10 \(kafka\.server\.KafkaApis\)$", broker.text("server.log"), re.M)
    # -1 = unknown: never stale; a newer epoch than ours: accepted (2.6+)
    assert broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0)], broker_epoch=-1))["error_code"] == 0
    assert broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(1)], broker_epoch=11))["error_code"] == 0
    assert broker.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [pstate(0)], broker_epoch=3))["error_code"] == 77
    assert broker.call(ApiKey.STOP_REPLICA, 1, sr_body(1, [0], broker_epoch=3))["error_code"] == 77
    server = broker.text("server.log")
    assert "Received update metadata request with broker epoch 3 smaller than the current broker epoch 10" in server
    assert "Received stop replica request with broker epoch 3 smaller than the current broker epoch 10" in server


def test_max_broker_epoch_tagged_field(broker: Broker) -> None:
    broker.state.set_broker_epoch(10)
    stale = broker.call(ApiKey.LEADER_AND_ISR, 4, lai_body(4, [pstate(0)], broker_epoch=-1, max_broker_epoch=9))
    assert stale["error_code"] == 77
    # max_broker_epoch decides when present, even if broker_epoch alone would be stale
    ok = broker.call(ApiKey.LEADER_AND_ISR, 4, lai_body(4, [pstate(0)], broker_epoch=5, max_broker_epoch=10))
    assert ok["error_code"] == 0
    assert "stale broker epoch info (broker epoch:-1},max broker epoch:9) when the current broker epoch is 10" in (
        broker.text("server.log"))


# ------------------------------------------------------------------------------------------ UpdateMetadata + Metadata

def test_metadata_before_any_update_metadata_lists_this_broker(broker: Broker) -> None:
    data = broker.call(ApiKey.METADATA, 1, {"topics": None}, DATA)
    assert data["brokers"] == [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}]
    assert data["controller_id"] == -1
    assert data["topics"] == []
    ctrl = broker.call(ApiKey.METADATA, 9, {"topics": None}, CONTROL)
    assert [(b["host"], b["port"]) for b in ctrl["brokers"]] == [("127.0.0.1", 9093)]
    assert ctrl["cluster_id"] == "pw-cluster"


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6, 7, 8])
def test_update_metadata_every_version_feeds_metadata(broker: Broker, version: int) -> None:
    states = [pstate(p, leader=1 + p % 2, isr=[1, 2], replicas=[1, 2]) for p in range(4)]
    resp = broker.send(ApiKey.UPDATE_METADATA, version, um_body(version, states, brokers=(1, 2)))
    assert resp.metric_name == "UpdateMetadata"
    assert resp.error_codes == (0,)
    md = broker.call(ApiKey.METADATA, 1, {"topics": [{"name": "bar"}, {"name": "nope"}]}, DATA)
    assert md["controller_id"] == 1
    # v0 has one PLAINTEXT host/port, v1-2 name endpoints after their security protocol, v3+ carry listener names
    assert sorted(b["node_id"] for b in md["brokers"]) == [1, 2]
    bar, nope = md["topics"]
    assert nope["error_code"] == 3
    assert nope["name"] == "nope"
    assert bar["error_code"] == 0
    assert [(p["partition_index"], p["leader_id"], p["error_code"]) for p in bar["partitions"]] == [
        (0, 1, 0), (1, 2, 0), (2, 1, 0), (3, 2, 0)]
    assert "Add 4 partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request " \
           "sent by controller 1 epoch 5 with correlation id 1" in broker.text("state-change.log")


def test_metadata_v12_and_leader_not_available(broker: Broker) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 7, um_body(7, [pstate(0, leader=3, isr=[3], replicas=[3, 1]), pstate(1)]))
    md = broker.call(ApiKey.METADATA, 12, {"topics": None, "include_topic_authorized_operations": False}, DATA)
    (bar,) = md["topics"]
    assert bar["topic_id"] == uuid.UUID(int=7)
    p0, p1 = bar["partitions"]
    assert (p0["error_code"], p0["leader_id"], p0["leader_epoch"], p0["replica_nodes"]) == (5, -1, 3, [3, 1])
    assert (p1["error_code"], p1["leader_id"]) == (0, 1)


def test_update_metadata_deletes_with_leader_minus_two(broker: Broker) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [pstate(0), pstate(1)]))
    broker.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [pstate(0, leader=-2)]))
    md = broker.call(ApiKey.METADATA, 1, {"topics": None}, DATA)
    assert [p["partition_index"] for p in md["topics"][0]["partitions"]] == [1]
    assert "Add 0 partitions and deleted 1 partitions from metadata cache" in broker.text("state-change.log")


def test_update_metadata_from_an_old_controller_is_stale(broker: Broker) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [pstate(0)], controller_epoch=6))
    resp = broker.call(ApiKey.UPDATE_METADATA, 5, um_body(5, [pstate(1)], controller_epoch=5))
    assert resp["error_code"] == 11
    assert ("WARN [Broker id=1] Received update metadata request with correlation id 2 from an old controller 1 "
            "with epoch 5. Latest known controller epoch is 6") in broker.text("state-change.log")
    md = broker.call(ApiKey.METADATA, 1, {"topics": None}, DATA)
    assert [p["partition_index"] for p in md["topics"][0]["partitions"]] == [0]


# ------------------------------------------------------------------------------------------------------ StopReplica

@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_stop_replica_every_version_removes_deleted_partitions(broker: Broker, version: int) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(p) for p in range(4)]))
    resp = broker.send(ApiKey.STOP_REPLICA, version, sr_body(version, [2, 3], delete=True, leader_epoch=-2))
    assert resp.metric_name == "StopReplica"
    assert resp.error_codes == (0, 0, 0)
    assert resp.frame is not None
    _, body = decode_response(ApiKey.STOP_REPLICA, version, resp.frame[4:])
    assert body["error_code"] == 0
    assert [(p["topic_name"], p["partition_index"], p["error_code"]) for p in body["partition_errors"]] == [
        ("bar", 2, 0), ("bar", 3, 0)]
    assert sorted(tp.partition for tp in broker.state.partitions()) == [0, 1]
    assert re.search("^" + TS + r" INFO \[Broker id=1\] Handling StopReplica request correlationId 2 from controller "
                     r"1 for 2 partitions \(state\.change\.logger\)$", broker.text("state-change.log"), re.M)


def test_stop_replica_without_delete_keeps_the_partition(broker: Broker) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(9)]))
    assert broker.call(ApiKey.STOP_REPLICA, 1, sr_body(1, [9]))["error_code"] == 0
    assert TopicPartition("bar", 9) in broker.state.partitions()


def test_stop_replica_leader_epoch_fencing(broker: Broker) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(0, leader_epoch=3), pstate(1, leader_epoch=3)]))
    resp = broker.call(ApiKey.STOP_REPLICA, 3, {"controller_id": 1, "controller_epoch": 5, "broker_epoch": -1,
                                                "topic_states": [{"topic_name": "bar", "partition_states": [
                                                    {"partition_index": 0, "leader_epoch": 2, "delete_partition": True},
                                                    {"partition_index": 1, "leader_epoch": 3, "delete_partition": True},
                                                ]}]})
    assert [p["error_code"] for p in resp["partition_errors"]] == [74, 74]
    assert len(broker.state.partitions()) == 2
    text = broker.text("state-change.log")
    assert ("WARN [Broker id=1] Ignoring StopReplica request (delete=true) from controller 1 with correlation id 2 "
            "epoch 5 for partition bar-0 since its associated leader epoch 2 is smaller than the current leader "
            "epoch 3") in text
    assert "for partition bar-1 since its associated leader epoch 3 matches the current leader epoch" in text


def test_stop_replica_stale_controller_epoch(broker: Broker) -> None:
    broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(0)], controller_epoch=7))
    resp = broker.call(ApiKey.STOP_REPLICA, 1, sr_body(1, [0], controller_epoch=6, delete=True))
    assert resp["error_code"] == 11
    assert resp["partition_errors"] == []
    assert "Ignoring StopReplica request from controller 1 with correlation id 2 since its controller epoch 6 is " \
           "old. Latest known controller epoch is 7" in broker.text("state-change.log")


# ------------------------------------------------------------------------------------------------------ the lock

class SlowFetcher(NullFetcherManager):
    """A fetcher manager whose removal takes a while (KAFKA-6974: a fetcher holding its partition-map lock)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def remove_fetcher_for_partitions(self, partitions: Any) -> None:
        time.sleep(self.delay)
        super().remove_fetcher_for_partitions(partitions)


def test_replica_state_change_lock_serialises_control_requests(tmp_path: Path) -> None:
    b = Broker(tmp_path, fetcher=SlowFetcher(0.15))
    b.log4j.close()
    b.log4j.configure(tmp_path, levels={"kafka.server.ReplicaManager": "DEBUG"})
    try:
        results: list[Response] = []
        threads = [threading.Thread(target=lambda p=p: results.append(
            b.send(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(p)], topic=f"t{p}")))) for p in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert all(not t.is_alive() for t in threads)
        assert len(results) == 3
        assert all(r.error_codes == (0, 0) for r in results)
        text = b.text("state-change.log")
        server = b.text("server.log")
    finally:
        b.close()
    events = re.findall(r"(Handling|Finished) LeaderAndIsr request (?:in (\d+)ms )?correlationId (\d+)", text)
    assert [e[0] for e in events] == ["Handling", "Finished"] * 3
    assert all(events[i][2] == events[i + 1][2] for i in range(0, 6, 2))  # never interleaved
    # the later requests waited for the lock: their elapsed includes the wait (Kafka measures before the lock)
    elapsed = sorted(int(e[1]) for e in events if e[0] == "Finished")
    assert elapsed[0] >= 150
    assert elapsed[2] >= 400
    waits = sorted(w.wait_ns for w in b.state.lock_waits)
    assert waits[0] < 100_000_000
    assert waits[2] >= 250_000_000
    lines = re.findall(r"^" + TS + r" DEBUG \[ReplicaManager broker=1\] LeaderAndIsr correlationId (\d+) waited (\d+) "
                       r"ms for replicaStateChangeLock \(planewatch\) \(kafka\.server\.ReplicaManager\)$", server, re.M)
    assert len(lines) == 3
    assert max(int(w) for _, w in lines) >= 250


def test_reads_do_not_wait_for_the_state_change_lock(tmp_path: Path) -> None:
    entered = threading.Event()

    class BlockingFetcher(NullFetcherManager):
        def remove_fetcher_for_partitions(self, partitions: Any) -> None:
            entered.set()
            time.sleep(0.5)  # a fetcher holding its partition-map lock (KAFKA-6974)
            super().remove_fetcher_for_partitions(partitions)

    b = Broker(tmp_path, fetcher=BlockingFetcher())
    try:
        t = threading.Thread(target=b.send, args=(ApiKey.LEADER_AND_ISR, 5, lai_body(5, [pstate(0), pstate(1)])))
        t.start()
        assert entered.wait(10)
        assert b.state.partitions() == {}  # the published state: nothing half-applied, and no waiting
        assert b.state.partition_count() == 0
        assert t.is_alive()  # the LeaderAndIsr was still holding the lock while we read
        t.join(10)
        assert b.state.partition_count() == 2
    finally:
        b.close()


def test_check_broker_patterns(broker: Broker) -> None:
    """The exact patterns of /work/shared/checks/check-broker (copied), on a 10-partition LeaderAndIsr v2."""
    broker.call(ApiKey.LEADER_AND_ISR, 2, lai_body(2, [pstate(p) for p in range(10)], topic="bar-topic"))
    text = broker.text("state-change.log")
    pat = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] INFO \[Broker id=1\] Handling LeaderAndIsr request "
                     r"correlationId \d+ from controller 1 for 10 partitions \(state\.change\.logger\)$", re.M)
    fin = re.compile(r"Finished LeaderAndIsr request in \d+ms correlationId \d+ from controller 1 for 10 partitions",
                     re.M)
    assert pat.search(text)
    assert fin.search(text)
    # FACTS.md 1.5 (2.7-3.x ZK) example shapes, with our numbers
    assert re.search(r"^" + TS + r" INFO \[Broker id=1\] Stopped fetchers as part of LeaderAndIsr request "
                     r"correlationId 1 from controller 1 epoch 5 as part of the become-leader transition for 10 "
                     r"partitions \(state\.change\.logger\)$", text, re.M)


def test_metadata_by_topic_id(broker: Broker) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 7, um_body(7, [pstate(0)]))
    md = broker.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": uuid.UUID(int=7), "name": None},
                                                      {"topic_id": uuid.UUID(int=9), "name": None}],
                                           "include_topic_authorized_operations": False}, DATA)
    got = sorted((t["error_code"], t["name"], t["topic_id"]) for t in md["topics"])
    assert got == [(0, "bar", uuid.UUID(int=7)), (100, None, uuid.UUID(int=9))]


def test_trailing_bytes_after_the_body_are_ignored_as_kafka_does(broker: Broker) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 7, um_body(7, [pstate(0)]))
    # librdkafka 2.16's Metadata v12 "all topics" request, as captured: 00 00 00 00 | 01 00 00 after the header
    frame = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    resp = broker.apis.handle(raw_request(frame, DATA))
    assert not resp.close
    assert resp.frame is not None
    corr, md = decode_response(ApiKey.METADATA, 12, resp.frame[4:])
    assert corr == 3
    assert [t["name"] for t in md["topics"]] == ["bar"]


@pytest.mark.parametrize("version", list(range(13)))
def test_metadata_every_version(broker: Broker, version: int) -> None:
    broker.call(ApiKey.UPDATE_METADATA, 7, um_body(7, [pstate(0), pstate(1, leader=2, isr=[2], replicas=[2])],
                                                       brokers=(1, 2)))
    topics: Any = [{"name": "bar", "topic_id": uuid.UUID(int=0)}] if version else [{"name": "bar"}]
    md = broker.call(ApiKey.METADATA, version, {"topics": topics, "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False}, DATA)
    assert sorted(b["node_id"] for b in md["brokers"]) == [1, 2]
    (bar,) = md["topics"]
    got = [(p["partition_index"], p["leader_id"], p["error_code"]) for p in bar["partitions"]]
    assert got == [(0, 1, 0), (1, 2, 0)]
    if version >= 1:
        assert md["controller_id"] == 1
    if version >= 2:
        assert md["cluster_id"] == "pw-cluster"


def test_concurrent_reads_and_control_requests(broker: Broker) -> None:
    """Handler threads read Metadata while control requests change the state: every answer decodes, none fails."""
    errors: list[BaseException] = []
    stop_at = time.monotonic() + 10  # bound in time as well as in count

    def reader() -> None:
        try:
            for _ in range(60):
                if time.monotonic() > stop_at:
                    return
                md = broker.call(ApiKey.METADATA, 9, {"topics": None}, DATA)
                for t in md["topics"]:
                    assert t["error_code"] == 0
        except BaseException as exc:
            errors.append(exc)

    def controller() -> None:
        try:
            for i in range(15):
                states = [pstate(p, leader_epoch=10 + i) for p in range(20)]
                assert broker.call(ApiKey.UPDATE_METADATA, 7, um_body(7, states))["error_code"] == 0
                assert broker.call(ApiKey.LEADER_AND_ISR, 5, lai_body(5, states))["error_code"] == 0
                assert broker.call(ApiKey.STOP_REPLICA, 3, sr_body(3, [i], delete=True, leader_epoch=-2)
                                   )["error_code"] == 0
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=controller)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    # the last round re-created 0-19 (a newer leader epoch each round) and then deleted 14
    assert sorted(tp.partition for tp in broker.state.partitions()) == [p for p in range(20) if p != 14]
