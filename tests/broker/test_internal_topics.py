"""``__consumer_offsets`` is the coordinator's topic, not a user's; offsets are not committed to topics that do not
exist (a real in-process broker on the wire)."""

from __future__ import annotations

from pathlib import Path

from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode

from .data_plane_helpers import Wire, broker

OFFSETS_PARTITIONS = 3


def _create(w: Wire, topic: str, partitions: int) -> dict[str, object]:
    resp = w.call(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": topic, "num_partitions": partitions,
                                                        "replication_factor": 1}], "timeout_ms": 5000})
    return dict(resp["topics"][0])


def _offsets_topic(w: Wire) -> tuple[int, int, bool]:
    (t,) = w.call(ApiKey.METADATA, 9, {"topics": [{"name": "__consumer_offsets"}],
                                       "allow_auto_topic_creation": False})["topics"]
    return int(t["error_code"]), len(t["partitions"]), bool(t["is_internal"])


def test_the_offsets_topic_is_created_by_the_coordinator_never_by_create_topics(tmp_path: Path) -> None:
    with broker(tmp_path, offsets__topic__num__partitions=OFFSETS_PARTITIONS) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        refused = _create(w, "__consumer_offsets", 1)
        assert refused["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert refused["error_message"] == ("Topic __consumer_offsets is internal: its coordinator creates it, "
                                            "not a client.")
        assert _offsets_topic(w) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, True)
        assert not (tmp_path / "data" / "__consumer_offsets-0").exists()
        w.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})  # the coordinator creates it, its own way
        assert _offsets_topic(w) == (ErrorCode.NONE, OFFSETS_PARTITIONS, True)
        assert _create(w, "__consumer_offsets", 1)["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
        w.close()


def test_offsets_for_a_topic_that_does_not_exist_are_refused(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        w.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
        commit = w.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": "g", "generation_id_or_member_epoch": -1,
                                                  "member_id": "", "topics": [{"name": "missing", "partitions": [
                                                      {"partition_index": 0, "committed_offset": 5}]}]})
        assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        fetched = w.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "missing",
                                                                               "partition_indexes": [0]}]})
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == -1  # nothing was stored
        w.close()
