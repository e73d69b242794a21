"""Topic creation on the reference cluster follows the standalone broker's rules: a name given twice and an internal
topic are refused at the broker, and a replica whose log cannot be created is offline alone (KAFKA_STORAGE_ERROR in
its LeaderAndIsr answer) while the broker goes on serving the others. A controller and two brokers run as processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode
from tests.broker.cluster_helpers import CLUSTER_POLL, CLUSTER_S, partition, running_cluster
from tests.broker.data_plane_helpers import Wire
from tests.broker.test_data_plane import FETCH_V, PRODUCE_V, batch, fetch_body, part, produce_body
from tests.polling import wait_until

# What a broker answers for a partition before the LeaderAndIsr making it leader has reached it.
NOT_LEADER_YET = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def _skipped_st0(line: str) -> bool:
    """Kafka's line for a replica whose log cannot be had: "Skipped the become-(leader|follower) state change with
    correlation id ... for partition st-0 ... offline due to disk error ...KafkaStorageException: ..."."""
    return ("Skipped the become-" in line and "for partition st-0 " in line and "offline due to disk error" in line
            and "KafkaStorageException" in line)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(180)
def test_cluster_create_topics_checks_names_and_a_replica_that_cannot_be_created_is_offline_alone(
        tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=2) as cluster:
        w = Wire(cluster.ports[1]["PLAINTEXT"])
        w.sock.settimeout(30)
        body = {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1}
                           for n in ("twice", "__consumer_offsets", "twice", "once")], "timeout_ms": 10_000}
        answers = {t["name"]: (t["error_code"], t["error_message"])
                   for t in w.call(ApiKey.CREATE_TOPICS, 5, body)["topics"]}
        assert answers == {
            "twice": (ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."),
            "__consumer_offsets": (ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   "Topic __consumer_offsets is internal: its coordinator creates it, not a client."),
            "once": (ErrorCode.NONE, None)}
        # broker 2 cannot create the log of st-0 (a file where its directory goes): that replica is offline, the
        # broker answers the rest of the LeaderAndIsr and goes on serving
        (cluster.broker_dir(2) / "data" / "st-0").write_text("in the way")
        body = {"topics": [{"name": "st", "num_partitions": 2, "replication_factor": 2}], "timeout_ms": 10_000}
        assert w.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]["error_code"] == ErrorCode.NONE
        state_change = cluster.broker_dir(2) / "logs" / "state-change.log"
        wait_until(lambda: any(map(_skipped_st0, state_change.read_text().splitlines())),
                   CLUSTER_S, "broker 2 to skip st-0", **CLUSTER_POLL)
        wait_until(lambda: (p := partition(cluster, "st", 1)) is not None and len(p["isr"]) == 2,
                   CLUSTER_S, "both replicas of st-1", **CLUSTER_POLL)
        leader1 = partition(cluster, "st", 1)
        assert leader1 is not None
        lw = Wire(cluster.ports[leader1["leader"]]["PLAINTEXT"])
        lw.sock.settimeout(30)

        def produce() -> dict[str, Any] | None:
            """The produce answer, None while the leader has not applied its LeaderAndIsr yet (the controller's
            view above is ahead of the broker's; a refused produce appends nothing, so asking again is safe)."""
            got: dict[str, Any] = part(lw.call(ApiKey.PRODUCE, PRODUCE_V,
                                               produce_body("st", batch(2), partition=1, acks=-1)))
            return None if got["error_code"] in NOT_LEADER_YET else got

        produced = wait_until(produce, CLUSTER_S, "the leader of st-1 to take a produce", **CLUSTER_POLL)
        assert produced["error_code"] == ErrorCode.NONE
        fetched = part(lw.call(ApiKey.FETCH, FETCH_V, fetch_body("st", 0, partition=1)), parts="partitions")
        assert fetched["high_watermark"] == 2
        lw.close()
        w.close()
