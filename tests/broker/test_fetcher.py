"""Replica fetcher against a real leader (an in-process reference broker): replication, and the two lock models.

With slow leader-epoch-checkpoint flushes (``planewatch.leader.epoch.checkpoint.delay.ms``) a fetcher spends a long
time processing one response. In the locked model a LeaderAndIsr-style ``remove_partitions`` on another thread waits
for that whole response (KAFKA-6974); in the async model it returns at once. The tests assert the ordering and the
logged lock waits, not wall-clock speed.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer

from broker.apis.factory import data_plane_of as _data_plane_of
from broker.fetcher.thread import FetchSettings, ReplicaFetcherThread
from broker.log import LogManager
from broker.log4j import Log4j
from broker.state.model import BrokerEndPoint, InitialFetchState, TopicPartition
from tests.broker.data_plane_helpers import bootstrap, broker
from tests.polling import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.integration]
PARTITIONS = 4
DELAY_MS = 300  # per partition: the first append of each partition assigns epoch 0 and flushes the checkpoint


def _leo(logs: LogManager, p: int) -> int:
    log = logs.get_log(TopicPartition("f", p))
    return log.log_end_offset if log is not None else 0


@pytest.mark.parametrize("model", ["locked", "async"])
def test_fetcher_lock_models(tmp_path: Path, model: str) -> None:
    with broker(tmp_path / "leader") as leader:
        dp = _data_plane_of(leader.apis)  # type: ignore[arg-type]
        assert dp.create_topic("f", PARTITIONS, 1) == (0, None)
        prod = Producer({"bootstrap.servers": bootstrap(leader), "acks": "1"})
        for i in range(40):
            prod.produce("f", value=b"x" * 10, partition=i % PARTITIONS)
        assert prod.flush(30) == 0
        log4j = Log4j().configure(tmp_path / "follower-logs", levels={"kafka.server.ReplicaFetcherManager": "DEBUG"})
        logs = LogManager.from_properties({"log.dirs": str(tmp_path / "follower-data"),
                                           "planewatch.leader.epoch.checkpoint.delay.ms": str(DELAY_MS)},
                                          log4j=log4j)
        logs.startup()
        endpoint = BrokerEndPoint(1, "127.0.0.1", leader.bound_port("PLAINTEXT"))
        thread = ReplicaFetcherThread(2, 0, endpoint, logs, FetchSettings(model=model, max_wait_ms=100), log4j)
        before = set(threading.enumerate())
        try:
            tps = [TopicPartition("f", p) for p in range(PARTITIONS)]
            thread.add_partitions({tp: InitialFetchState(endpoint, 0, 0) for tp in tps})
            thread.start()
            wait_until(lambda: any(_leo(logs, p) for p in range(PARTITIONS)), 30, "the follower's first fetch",
                       interval=0.005)
            # The fetcher is now inside the processing of its first response (one slow flush per partition).
            thread.remove_partitions([tps[-1]])  # what LeaderAndIsr's handler thread does
            done = sum(1 for p in range(PARTITIONS) if _leo(logs, p))
            if model == "locked":
                assert done == PARTITIONS  # the handler waited for the whole response to be processed
            else:
                assert done < PARTITIONS  # the handler did not wait: processing is still going on
            assert not thread.hosts(tps[-1]) or model == "async"
            wait_until(lambda: all(_leo(logs, p) >= 10 for p in range(PARTITIONS - 1)) and not thread.hosts(tps[-1]),
                       30, "the replication and the removal to complete", interval=0.02)
        finally:
            thread.shutdown()
            logs.shutdown()
        log4j.flush()
        text = (tmp_path / "follower-logs" / "server.log").read_text()
        waits = [int(w) for w in re.findall(r"\[ReplicaFetcherManager on broker 2\] LeaderAndIsr waited (\d+) ms for "
                                            r"partitionMapLock of ReplicaFetcherThread-0-1 \(planewatch\)", text)]
        log4j.close()
        assert len(waits) == 2  # add, remove
        if model == "locked":
            assert waits[1] >= DELAY_MS  # at least one more partition's flush happened while the handler waited
        else:
            assert waits == [0, 0]
        assert not [t for t in set(threading.enumerate()) - before if t.is_alive() and t.name.startswith("Replica")]


@pytest.mark.parametrize("model", ["locked", "async"])
def test_leader_and_isr_handling_waits_for_the_fetcher_only_when_locked(tmp_path: Path, model: str) -> None:
    """KAFKA-6974 through ReplicaManager: a become-leader LeaderAndIsr removes a partition from a busy fetcher."""
    from broker.cluster.node import LocalLogs
    from broker.fetcher import ReplicaFetcherManager
    from broker.state.model import (
        Endpoint,
        LeaderAndIsrPartition,
        LeaderAndIsrRequestModel,
        LiveBroker,
        UpdateMetadataRequestModel,
    )
    from broker.state.replica_manager import BrokerState

    with broker(tmp_path / "leader") as leader:
        dp = _data_plane_of(leader.apis)  # type: ignore[arg-type]
        assert dp.create_topic("f", PARTITIONS, 1) == (0, None)
        prod = Producer({"bootstrap.servers": bootstrap(leader), "acks": "1"})
        for i in range(40):
            prod.produce("f", value=b"x" * 10, partition=i % PARTITIONS)
        assert prod.flush(30) == 0
        log4j = Log4j().configure(tmp_path / "follower-logs", levels={"kafka.server.ReplicaFetcherManager": "DEBUG",
                                                                      "kafka.server.ReplicaManager": "DEBUG"})
        logs = LogManager.from_properties({"log.dirs": str(tmp_path / "follower-data"),
                                           "planewatch.leader.epoch.checkpoint.delay.ms": str(DELAY_MS)},
                                          log4j=log4j)
        logs.startup()
        mgr = ReplicaFetcherManager(2, logs, FetchSettings(model=model, max_wait_ms=100), log4j)
        state = BrokerState(2, log4j=log4j, fetcher_manager=mgr, local_log=LocalLogs(logs))
        port = leader.bound_port("PLAINTEXT")
        live = (LiveBroker(1, (Endpoint("PLAINTEXT", "127.0.0.1", port, 0),)),
                LiveBroker(2, (Endpoint("PLAINTEXT", "127.0.0.1", 1, 0),)))
        try:
            state.maybe_update_metadata_cache(0, UpdateMetadataRequestModel(1, 1, -1, (), live))

            def lai(corr: int, leader_id: int, epoch: int, parts: range) -> None:
                states = tuple(LeaderAndIsrPartition("f", p, 1, leader_id, epoch, (1, 2), epoch, (1, 2))
                               for p in parts)
                state.become_leader_or_follower(corr, LeaderAndIsrRequestModel(1, 1, -1, states))

            lai(1, 1, 1, range(PARTITIONS))  # become follower of broker 1: the fetcher starts
            wait_until(lambda: any(_leo(logs, p) for p in range(PARTITIONS)), 30, "the follower's first fetch",
                       interval=0.005)
            lai(2, 2, 2, range(PARTITIONS - 1, PARTITIONS))  # become leader of the last one: remove its fetcher
            done = sum(1 for p in range(PARTITIONS) if _leo(logs, p))
            assert done == PARTITIONS if model == "locked" else done < PARTITIONS
        finally:
            mgr.shutdown()
            logs.shutdown()
        log4j.flush()
        text = (tmp_path / "follower-logs" / "server.log").read_text()
        log4j.close()
        waits = [int(w) for w in re.findall(r"LeaderAndIsr waited (\d+) ms for partitionMapLock", text)]
        assert len(waits) >= 2
        if model == "locked":
            assert max(waits) >= DELAY_MS
        else:
            assert max(waits) == 0
        finished = (tmp_path / "follower-logs" / "state-change.log").read_text()
        assert re.search(r"Finished LeaderAndIsr request in \d+ms correlationId 2 from controller 1 for 1 partitions",
                         finished)


@pytest.mark.parametrize("model", ["locked", "async"])
@pytest.mark.parametrize("extra", [0, 3], ids=["acknowledged-above-local-hw", "divergent-tail"])
def test_a_new_follower_truncates_to_the_leaders_epoch_end_not_to_its_local_high_watermark(
        tmp_path: Path, model: str, extra: int) -> None:
    """KIP-101: records the follower holds and the leader has survive becoming a follower; only a tail the leader
    does not have (the end of the follower's epoch on the leader) is cut. Truncating to the local high watermark
    instead lost acknowledged records when such a follower was elected next (a full cluster restart)."""
    from broker.protocol.batch import set_base_offset, set_partition_leader_epoch
    from broker.protocol.records import build_batch

    tp = TopicPartition("k", 0)
    with broker(tmp_path / "leader") as leader:
        dp = _data_plane_of(leader.apis)  # type: ignore[arg-type]
        assert dp.create_topic("k", 1, 1) == (0, None)
        lookup = dp.leader_log(tp)
        assert lookup.log is not None
        assert lookup.state is not None
        epoch = lookup.state.leader_epoch
        for i in range(3):
            lookup.log.append_as_leader(build_batch([(f"k{i}-{j}".encode(), b"v") for j in range(3)]), epoch)
        dp.after_leader_append(tp, lookup.log, lookup.state)
        leader_end = lookup.log.log_end_offset
        assert leader_end == 9
        log4j = Log4j().configure(tmp_path / "follower-logs")
        logs = LogManager.from_properties({"log.dirs": str(tmp_path / "follower-data")}, log4j=log4j)
        logs.startup()
        follower = logs.get_or_create_log(tp)
        follower.append_as_follower(lookup.log.read(0, 1 << 20).records)
        if extra:  # records of the same epoch the leader never got (an old leadership's uncommitted tail)
            tail = bytearray(build_batch([(b"lost", b"v")] * extra))
            set_base_offset(tail, 0, leader_end)
            set_partition_leader_epoch(tail, 0, epoch)
            follower.append_as_follower(bytes(tail))
        assert (follower.high_watermark, follower.log_end_offset) == (0, leader_end + extra)
        endpoint = BrokerEndPoint(1, "127.0.0.1", leader.bound_port("PLAINTEXT"))
        thread = ReplicaFetcherThread(2, 0, endpoint, logs, FetchSettings(model=model, max_wait_ms=100), log4j)
        try:
            thread.add_partitions({tp: InitialFetchState(endpoint, epoch, 0)})
            thread.start()
            wait_until(lambda: follower.high_watermark >= leader_end and follower.log_end_offset == leader_end, 30,
                       lambda: f"the follower to catch up with {leader_end} (high watermark, log end: "
                               f"{follower.high_watermark}, {follower.log_end_offset})")
        finally:
            thread.shutdown()
            logs.shutdown()
        log4j.flush()
        text = (tmp_path / "follower-logs" / "server.log").read_text()
        log4j.close()
        cuts = re.findall(r"Truncating to offset (\d+) \(kafka\.log\.Log\)", text)
        assert cuts == ([str(leader_end)] if extra else [])  # never below what the leader has
        if extra:
            assert f"Truncating partition k-0 to the end offset of epoch {epoch} {leader_end}" in text
