"""The data plane over the wire: bad input, long polls, acks=all purgatory, leadership changes (issue 3)."""

from __future__ import annotations

import struct
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.log import LogManager, TopicPartition
from broker.protocol import ApiKey
from broker.protocol.records import build_batch, decode_records, parse_batches
from broker.server import KafkaServer
from tests.broker.data_plane_helpers import Wire, broker
from tests.polling import wait_until

PRODUCE_V, FETCH_V, LIST_V = 8, 11, 5


def produce_body(topic: str, records: bytes | None, *, partition: int = 0, acks: int = 1,
                 timeout_ms: int = 5000) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def fetch_body(topic: str, offset: int, *, partition: int = 0, max_wait_ms: int = 0, min_bytes: int = 1,
               replica_id: int = -1) -> dict[str, Any]:
    return {"replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                        "fetch_offset": offset, "log_start_offset": -1,
                                                        "partition_max_bytes": 1 << 20}]}]}


def part(resp: dict[str, Any], key: str = "responses", parts: str = "partition_responses") -> dict[str, Any]:
    return dict(resp[key][0][parts][0])


def batch(n: int, start: int = 0) -> bytes:
    return build_batch([(f"k{i}".encode(), f"v{i}".encode()) for i in range(start, start + n)])


def parked(server: KafkaServer) -> int:
    """The operations parked in the broker's purgatory now (long polls, acks=all produces: Kafka's PurgatorySize)."""
    data_plane = getattr(server.apis, "data_plane", None)
    assert data_plane is not None
    return int(data_plane.purgatory.waiting)


def create(w: Wire, topic: str, partitions: int = 1) -> None:
    resp = w.call(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                                          "replication_factor": 1, "assignments": [],
                                                          "configs": []}],
                                              "timeout_ms": 5000, "validate_only": False})
    assert resp["topics"][0]["error_code"] == 0


@pytest.mark.timeout(60)
def test_fetch_checks_the_current_leader_epoch_with_kafkas_codes(tmp_path: Path) -> None:
    """KIP-320: a newer epoch than the leader's is UNKNOWN_LEADER_EPOCH (75); -1 means "not checked"."""
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        create(w, "epochs")
        leader_epoch = w.call(ApiKey.METADATA, 9, {"topics": [{"name": "epochs"}], "allow_auto_topic_creation": False,
                                                  "include_cluster_authorized_operations": False,
                                                  "include_topic_authorized_operations": False}
                              )["topics"][0]["partitions"][0]["leader_epoch"]
        codes = {}
        for label, epoch in (("unset", -1), ("current", leader_epoch), ("newer", leader_epoch + 1)):
            body = fetch_body("epochs", 0)
            body["topics"][0]["partitions"][0]["current_leader_epoch"] = epoch
            codes[label] = part(w.call(ApiKey.FETCH, FETCH_V, body), parts="partitions")["error_code"]
        assert codes == {"unset": 0, "current": 0, "newer": 75}


@pytest.mark.timeout(60)
def test_bad_input_gets_kafka_error_codes_and_the_connection_and_log_stay_healthy(tmp_path: Path) -> None:
    with broker(tmp_path, auto__create__topics__enable="false", message__max__bytes=2000) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        create(w, "bad")
        good = batch(3)
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("bad", good)))["error_code"] == 0
        bad_crc = bytearray(good)
        bad_crc[-1] ^= 0xFF
        bad_magic = bytearray(good)
        bad_magic[16] = 1
        lying = bytearray(good)
        struct.pack_into(">i", lying, 8, len(good) + 100)  # batch length beyond the bytes sent
        for records, code in ((bytes(bad_crc), 2), (bytes(bad_magic), 2), (bytes(lying), 2),
                              (batch(1) + batch(1), 2)):
            p = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("bad", records)))
            assert p["error_code"] in (code, 87), p  # CORRUPT_MESSAGE (87 INVALID_RECORD for two batches)
        big = build_batch([(b"k", b"x" * 5000)])
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("bad", big)))["error_code"] == 10
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("nosuch", good)))["error_code"] == 3
        f = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("bad", 99)), parts="partitions")
        assert f["error_code"] == 1  # OFFSET_OUT_OF_RANGE
        assert (f["high_watermark"], f["log_start_offset"]) == (3, 0)
        assert part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("nosuch", 0)), parts="partitions")["error_code"] == 3
        # still healthy: same connection, the log holds exactly the good batch, a new append follows it
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("bad", batch(2, 3))))["base_offset"] == 3
        f = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("bad", 0)), parts="partitions")
        recs = [r for b in parse_batches(f["records"]) for r in decode_records(f["records"], b)]
        assert [(r.offset, r.key) for r in recs] == [(i, f"k{i}".encode()) for i in range(5)]
        w.close()


@pytest.mark.timeout(60)
def test_long_poll_waits_for_min_bytes_and_is_woken_by_an_append(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        port = server.bound_port("PLAINTEXT")
        w, w2 = Wire(port), Wire(port)
        create(w, "lp")
        t0 = time.monotonic()
        empty = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("lp", 0, max_wait_ms=300)), parts="partitions")
        assert time.monotonic() - t0 >= 0.28
        assert empty["records"] == b""  # never null
        result: dict[str, Any] = {}

        def poll() -> None:
            result["resp"] = w.call(ApiKey.FETCH, FETCH_V, fetch_body("lp", 0, max_wait_ms=10_000))
            result["t"] = time.monotonic()

        th = threading.Thread(target=poll)
        th.start()
        wait_until(lambda: parked(server) == 1, what="the long poll parked")
        sent = time.monotonic()
        assert part(w2.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("lp", batch(4))))["error_code"] == 0
        th.join(10)
        assert not th.is_alive()
        assert result["t"] - sent < 2.0  # woken by the append, not by max_wait_ms
        assert len(part(result["resp"], parts="partitions")["records"]) > 0
        w.close()
        w2.close()


def _control_props() -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "control.plane.listener.name": "CONTROLLER"}


def _update_metadata(topic: str, leader: int, epoch: int, isr: list[int]) -> dict[str, Any]:
    live = [{"id": b, "endpoints": [{"port": 1 if b == 2 else 9092, "host": "127.0.0.1", "listener": "PLAINTEXT",
                                     "security_protocol": 0}], "rack": None} for b in (1, 2)]
    states = [{"partition_index": 0, "controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": isr,
               "zk_version": epoch, "replicas": [1, 2], "offline_replicas": []}]
    return {"controller_id": 9, "controller_epoch": 1, "broker_epoch": -1, "live_brokers": live,
            "topic_states": [{"topic_name": topic, "topic_id": uuid.UUID(int=0), "partition_states": states}]}


def _leader_and_isr(topic: str, leader: int, epoch: int, isr: list[int]) -> dict[str, Any]:
    states = [{"partition_index": 0, "controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": isr,
               "partition_epoch": epoch, "replicas": [1, 2], "adding_replicas": [], "removing_replicas": [],
               "is_new": False}]
    return {"controller_id": 9, "controller_epoch": 1, "broker_epoch": -1, "type": 0,
            "live_leaders": [{"broker_id": leader, "host_name": "127.0.0.1", "port": 1}],
            "topic_states": [{"topic_name": topic, "topic_id": uuid.UUID(int=0), "partition_states": states}]}


@pytest.mark.timeout(60)
def test_acks_all_waits_for_the_isr_and_times_out_then_completes_on_follower_fetch(tmp_path: Path) -> None:
    names = {k.replace(".", "__"): v for k, v in _control_props().items()}
    with broker(tmp_path, **names) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        ctl = Wire(server.bound_port("CONTROLLER"))
        create(w, "isr")
        assert ctl.call(ApiKey.UPDATE_METADATA, 6, _update_metadata("isr", 1, 1, [1, 2]))["error_code"] == 0
        lai = ctl.call(ApiKey.LEADER_AND_ISR, 4, _leader_and_isr("isr", 1, 1, [1, 2]))
        assert lai["error_code"] == 0
        t0 = time.monotonic()
        p = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("isr", batch(2), acks=-1, timeout_ms=300)))
        assert p["error_code"] == 7  # REQUEST_TIMED_OUT: replica 2 never fetched
        assert time.monotonic() - t0 >= 0.28
        # replica 2 fetches past the records: the high watermark moves, the next acks=all completes
        f = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("isr", 2, replica_id=2)), parts="partitions")
        assert f["error_code"] == 0
        assert f["high_watermark"] == 2
        result: dict[str, Any] = {}
        th = threading.Thread(target=lambda: result.update(r=w.call(
            ApiKey.PRODUCE, PRODUCE_V, produce_body("isr", batch(1), acks=-1, timeout_ms=10_000))))
        th.start()
        wait_until(lambda: parked(server) == 1, what="the acks=all produce parked")
        assert th.is_alive()  # parked in the purgatory
        w3 = Wire(server.bound_port("PLAINTEXT"))
        w3.call(ApiKey.FETCH, FETCH_V, fetch_body("isr", 3, replica_id=2))
        th.join(10)
        assert part(result["r"])["error_code"] == 0
        assert part(result["r"])["base_offset"] == 2
        for c in (w, ctl, w3):
            c.close()


@pytest.mark.timeout(90)
def test_leader_and_isr_to_follower_mid_stream_no_silent_loss(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    names = {k.replace(".", "__"): v for k, v in _control_props().items()}
    acked: list[tuple[int, bytes]] = []
    failed: list[str] = []
    with broker(tmp_path, **names) as server:
        port = server.bound_port("PLAINTEXT")
        w = Wire(port)
        ctl = Wire(server.bound_port("CONTROLLER"))
        create(w, "move")
        stop = threading.Event()

        def produce() -> None:
            p = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                                          "linger.ms": 5, "message.timeout.ms": 2500})

            def done(err: Any, msg: Any) -> None:
                if err is None:
                    acked.append((msg.offset(), msg.value()))
                else:
                    failed.append(err.name())
            i = 0
            while not stop.is_set() and i < 200_000:
                try:
                    p.produce("move", value=f"m{i}".encode(), partition=0, on_delivery=done)
                    i += 1
                except BufferError:
                    p.poll(0.01)
                if i % 500 == 0:
                    p.poll(0)
            p.flush(15)

        th = threading.Thread(target=produce)
        th.start()
        wait_until(lambda: len(acked) >= 2000, 20, "2000 acknowledged records", interval=0.02)
        assert ctl.call(ApiKey.UPDATE_METADATA, 6, _update_metadata("move", 2, 1, [2, 1]))["error_code"] == 0
        assert ctl.call(ApiKey.LEADER_AND_ISR, 4, _leader_and_isr("move", 2, 1, [2, 1]))["error_code"] == 0
        # the very next produce is refused
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("move", batch(1))))["error_code"] == 6
        assert part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("move", 0)), parts="partitions")["error_code"] == 6
        time.sleep(0.5)
        stop.set()
        th.join(30)
        assert not th.is_alive()
        w.close()
        ctl.close()
    assert len(acked) >= 2000
    assert failed, "messages produced after the move must fail, not vanish"
    # every acknowledged message is in the log at the offset the broker answered
    lm = LogManager([tmp_path / "data"])
    lm.startup()
    try:
        log = lm.get_log(TopicPartition("move", 0))
        assert log is not None
        data = log.read(0, 1 << 30).records
        stored = {r.offset: r.value for b in parse_batches(data) for r in decode_records(data, b)}
        assert all(stored.get(off) == value for off, value in acked)
    finally:
        lm.shutdown()


@pytest.mark.timeout(60)
def test_long_polls_never_park_more_than_half_the_handler_threads(tmp_path: Path) -> None:
    with broker(tmp_path, num__io__threads=2) as server:  # at most one parked long poll
        port = server.bound_port("PLAINTEXT")
        conns = [Wire(port) for _ in range(3)]
        create(conns[0], "cap")
        done: dict[int, float] = {}

        def poll(k: int) -> None:
            conns[k].call(ApiKey.FETCH, FETCH_V, fetch_body("cap", 0, max_wait_ms=2000))
            done[k] = time.monotonic()

        t0 = time.monotonic()
        threads = [threading.Thread(target=poll, args=(k,)) for k in (0, 1)]
        for th in threads:
            th.start()
        wait_until(lambda: parked(server) == 1, what="a long poll parked")
        # the other handler stays free for produce while one long poll is parked
        p0 = time.monotonic()
        assert part(conns[2].call(ApiKey.PRODUCE, PRODUCE_V, produce_body("cap", batch(1), acks=1)))["error_code"] == 0
        assert time.monotonic() - p0 < 1.0
        for th in threads:
            th.join(10)
        assert len(done) == 2
        early = min(done.values()) - t0
        assert early < 1.0  # one poll answered without parking (or woken by the produce)
        for c in conns:
            c.close()


@pytest.mark.timeout(60)
def test_parked_acks_all_answers_not_leader_when_leadership_moves(tmp_path: Path) -> None:
    names = {k.replace(".", "__"): v for k, v in _control_props().items()}
    with broker(tmp_path, **names) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        ctl = Wire(server.bound_port("CONTROLLER"))
        create(w, "park")
        assert ctl.call(ApiKey.UPDATE_METADATA, 6, _update_metadata("park", 1, 1, [1, 2]))["error_code"] == 0
        assert ctl.call(ApiKey.LEADER_AND_ISR, 4, _leader_and_isr("park", 1, 1, [1, 2]))["error_code"] == 0
        result: dict[str, Any] = {}

        def produce() -> None:
            result["r"] = w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("park", batch(3), acks=-1, timeout_ms=20_000))
            result["t"] = time.monotonic()

        th = threading.Thread(target=produce)
        th.start()
        wait_until(lambda: parked(server) == 1, what="the acks=all produce parked")
        assert th.is_alive()  # parked: replica 2 has not fetched
        moved = time.monotonic()
        assert ctl.call(ApiKey.LEADER_AND_ISR, 4, _leader_and_isr("park", 2, 2, [2, 1]))["error_code"] == 0
        th.join(10)
        assert part(result["r"])["error_code"] == 6  # NOT_LEADER_OR_FOLLOWER, not a timeout 20 s later
        assert result["t"] - moved < 2.0
        w.close()
        ctl.close()
