"""Pure pieces of the data plane (purgatory, producer sequences, offset store) and their wire behaviour."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from broker.apis.membership import GroupCoordinator
from broker.apis.offsets import CommittedOffset, OffsetStore
from broker.apis.producers import ProducerStates
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.protocol.records import build_batch, decode_records, parse_batches
from broker.purgatory import Purgatory
from broker.state import TopicPartition
from tests.broker.data_plane_helpers import Wire, broker
from tests.broker.test_data_plane import FETCH_V, PRODUCE_V, fetch_body, part, produce_body
from tests.polling import wait_until

TP = TopicPartition("t", 0)


def test_purgatory_completes_times_out_wakes_and_caps_optional_waits() -> None:
    pg = Purgatory(max_waiting=1)
    assert pg.await_completion(lambda: True, 0)
    t0 = time.monotonic()
    assert not pg.await_completion(lambda: False, 100)
    assert time.monotonic() - t0 >= 0.09
    flag = threading.Event()
    results: list[bool] = []
    th = threading.Thread(target=lambda: results.append(pg.await_completion(flag.is_set, 10_000)))
    th.start()
    wait_until(lambda: pg.waiting == 1, what="the wait parked")
    assert pg.waiting == 1
    t1 = time.monotonic()
    assert not pg.await_completion(lambda: False, 5_000, optional=True)  # cap reached: answered at once
    assert time.monotonic() - t1 < 1.0
    flag.set()
    pg.signal()
    th.join(5)
    assert results == [True]
    th2 = threading.Thread(target=lambda: results.append(pg.await_completion(lambda: False, 10_000)))
    th2.start()
    wait_until(lambda: pg.waiting == 1, what="the second wait parked")
    pg.close()
    th2.join(5)
    assert results == [True, False]


def test_producer_sequences_duplicates_gaps_and_epochs() -> None:
    ps = ProducerStates()
    assert ps.check(TP, 7, 0, 0, 4).error == 0
    ps.record(TP, 7, 0, 0, 4, 100)
    assert ps.check(TP, 7, 0, 0, 4).duplicate_of == 100  # a retry
    assert ps.check(TP, 7, 0, 6, 9).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    assert ps.check(TP, 7, 0, 5, 9).error == 0
    ps.record(TP, 7, 0, 5, 9, 105)
    assert ps.check(TP, 7, 1, 3, 4).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch must start at 0
    assert ps.check(TP, 7, 1, 0, 0).error == 0
    ps.record(TP, 7, 1, 0, 0, 110)
    assert ps.check(TP, 7, 0, 10, 10).error == ErrorCode.INVALID_PRODUCER_EPOCH  # fenced
    assert ps.check(TP, 8, 0, 42, 42).error == 0  # unknown producer (e.g. after a restart): accepted
    assert ps.check(TP, -1, -1, -1, -1).error == 0  # not idempotent


def test_offset_store_persists_and_survives_a_damaged_file(tmp_path: Path) -> None:
    store = OffsetStore(tmp_path)
    assert store.commit("g", {("t", 0): CommittedOffset(5, 1, "m"), ("t", 1): CommittedOffset(9, -1, None)})
    again = OffsetStore(tmp_path)
    assert again.get("g", "t", 0) == CommittedOffset(5, 1, "m")
    assert again.groups() == ["g"]
    (tmp_path / "consumer-offsets.json").write_text("{not json")
    broken = OffsetStore(tmp_path)
    assert broken.groups() == []
    assert (tmp_path / "consumer-offsets.corrupt").exists()


@pytest.mark.timeout(60)
def test_idempotent_retry_is_not_written_twice_and_topic_configs_survive_a_restart(tmp_path: Path) -> None:
    create = {"topics": [{"name": "idem", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                          "configs": [{"name": "message.timestamp.type", "value": "LogAppendTime"}]}],
              "timeout_ms": 5000, "validate_only": False}
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        assert w.call(ApiKey.CREATE_TOPICS, 5, create)["topics"][0]["error_code"] == 0
        pid = w.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert pid["error_code"] == 0
        records = build_batch([(b"k", b"once"), (b"k", b"twice?")], producer_id=pid["producer_id"],
                              producer_epoch=0, base_sequence=0)
        first = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("idem", records)))
        retry = part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("idem", records)))
        assert (first["error_code"], retry["error_code"]) == (0, 0)
        assert retry["base_offset"] == first["base_offset"] == 0
        gap = build_batch([(b"k", b"gap")], producer_id=pid["producer_id"], producer_epoch=0, base_sequence=5)
        assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("idem", gap)))["error_code"] == 45
        data = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("idem", 0)), parts="partitions")["records"]
        values = [r.value for b in parse_batches(data) for r in decode_records(data, b)]
        assert values == [b"once", b"twice?"]
        stamped = parse_batches(data)[0]
        assert stamped.log_append_time  # LogAppendTime applied
        w.close()
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        desc = w.call(ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [{"resource_type": 2, "resource_name": "idem",
                                                                   "configuration_keys": None}],
                                                    "include_synonyms": False})
        configs = {c["name"]: (c["value"], c["config_source"]) for c in desc["results"][0]["configs"]}
        assert configs["message.timestamp.type"] == ("LogAppendTime", 1)  # DYNAMIC_TOPIC_CONFIG
        w.close()


def _req() -> Request:
    return Request(0, "c", "PLAINTEXT", "PLAINTEXT", "127.0.0.1", b"", RequestHeader(11, 5, 1, "cli"), 0)


def test_group_member_expires_after_its_session_and_the_group_rebalances() -> None:
    now = [1000.0]
    gc = GroupCoordinator(clock=lambda: now[0])
    join = {"group_id": "g", "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    header = RequestHeader(11, 5, 1, "cli")
    first = gc.join_group(_req(), header, join).body
    assert first["error_code"] == 79  # MEMBER_ID_REQUIRED: JoinGroup v4+ without a member id (KIP-394)
    a = gc.join_group(_req(), header, dict(join, member_id=first["member_id"])).body
    assert (a["error_code"], a["generation_id"], a["leader"]) == (0, 1, a["member_id"])
    sync = {"group_id": "g", "generation_id": 1, "member_id": a["member_id"],
            "assignments": [{"member_id": a["member_id"], "assignment": b"all"}]}
    assert gc.sync_group(_req(), header, sync).body["assignment"] == b"all"
    hb = {"group_id": "g", "generation_id": 1, "member_id": a["member_id"]}
    now[0] += 5
    assert gc.heartbeat(_req(), header, hb).body["error_code"] == 0
    assert gc.validate_commit("g", a["member_id"], 2) == 22  # ILLEGAL_GENERATION
    now[0] += 7  # beyond session.timeout.ms without a heartbeat
    assert gc.heartbeat(_req(), header, hb).body["error_code"] == 25  # UNKNOWN_MEMBER_ID: expired
    described = gc.describe("g")
    assert described is not None
    assert described["members"] == []
    assert described["state"] == "Empty"
