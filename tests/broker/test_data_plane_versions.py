"""Every advertised version of every data-plane API answers a decodable response (success and error paths)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.protocol import SUPPORTED, ApiKey
from tests.broker.data_plane_helpers import Wire, broker

PROBES: dict[int, list[dict[str, Any]]] = {
    ApiKey.PRODUCE: [{"acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "v", "partition_data": [{"index": 0, "records": None}, {"index": 9, "records": None}]}]}],
    ApiKey.FETCH: [{"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000, "session_epoch": -1,
                    "topics": [{"topic": "v", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                              "partition_max_bytes": 1000},
                                                             {"partition": 0, "fetch_offset": 99,
                                                              "partition_max_bytes": 1000}]}]}],
    ApiKey.LIST_OFFSETS: [{"replica_id": -1, "topics": [{"name": "v", "partitions": [
        {"partition_index": 0, "timestamp": -1}, {"partition_index": 5, "timestamp": -2}]}]}],
    ApiKey.CREATE_TOPICS: [{"topics": [{"name": "v2", "num_partitions": 1, "replication_factor": 1},
                                       {"name": "bad name!", "num_partitions": 1, "replication_factor": 1},
                                       {"name": "v", "num_partitions": 1, "replication_factor": 3}],
                            "timeout_ms": 1000}],
    ApiKey.DELETE_TOPICS: [{"topic_names": ["nope"], "topics": [{"name": "nope"}], "timeout_ms": 1000}],
    ApiKey.FIND_COORDINATOR: [{"key": "g", "key_type": 0, "coordinator_keys": ["g"]},
                              {"key": "tx", "key_type": 1, "coordinator_keys": ["tx"]}],
    ApiKey.OFFSET_COMMIT: [{"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                            "topics": [{"name": "v", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                     "committed_metadata": None}]}]},
                           {"group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "ghost",
                            "topics": [{"name": "v", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]}],
    ApiKey.OFFSET_FETCH: [{"group_id": "g", "topics": [{"name": "v", "partition_indexes": [0, 1]}],
                           "groups": [{"group_id": "g", "topics": None}]}],
    ApiKey.JOIN_GROUP: [{"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                         "member_id": "ghost", "protocol_type": "consumer",
                         "protocols": [{"name": "range", "metadata": b""}]},
                        {"group_id": "g", "session_timeout_ms": 10, "member_id": "", "protocol_type": "consumer",
                         "protocols": [{"name": "range", "metadata": b""}]}],
    ApiKey.SYNC_GROUP: [{"group_id": "g", "generation_id": 1, "member_id": "ghost", "assignments": []}],
    ApiKey.HEARTBEAT: [{"group_id": "g", "generation_id": 1, "member_id": "ghost"}],
    ApiKey.LEAVE_GROUP: [{"group_id": "g", "member_id": "ghost", "members": [{"member_id": "ghost"}]}],
    ApiKey.DESCRIBE_GROUPS: [{"groups": ["g", "none"]}],
    ApiKey.LIST_GROUPS: [{}],
    ApiKey.DELETE_GROUPS: [{"groups_names": ["g", "none", ""]}],
    ApiKey.INIT_PRODUCER_ID: [{"transactional_id": None, "transaction_timeout_ms": 1000},
                              {"transactional_id": "tx", "transaction_timeout_ms": 1000}],
    ApiKey.DESCRIBE_CONFIGS: [{"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None},
                                             {"resource_type": 2, "resource_name": "v", "configuration_keys": None},
                                             {"resource_type": 2, "resource_name": "nope",
                                              "configuration_keys": None}]}],
    ApiKey.ALTER_CONFIGS: [{"resources": [{"resource_type": 4, "resource_name": "1", "configs": [
        {"name": "max.connections", "value": "oops"}]}], "validate_only": True}],
    ApiKey.INCREMENTAL_ALTER_CONFIGS: [{"resources": [{"resource_type": 4, "resource_name": "7", "configs": [
        {"name": "max.connections", "config_operation": 0, "value": "5"}]}], "validate_only": True}],
}


@pytest.mark.timeout(120)
def test_every_version_of_every_data_plane_api_answers(tmp_path: Path) -> None:
    with broker(tmp_path, auto__create__topics__enable="false") as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        w.call(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": "v", "num_partitions": 1, "replication_factor": 1}],
                                         "timeout_ms": 1000})
        answered = 0
        for api, bodies in PROBES.items():
            lo, hi = SUPPORTED[api]
            for version in range(lo, hi + 1):
                for body in bodies:
                    resp = w.call(api, version, body)  # raises on a closed connection or an undecodable answer
                    assert isinstance(resp, dict)
                    answered += 1
        assert answered == sum((SUPPORTED[a][1] - SUPPORTED[a][0] + 1) * len(b) for a, b in PROBES.items())
        w.close()
    server_log = (tmp_path / "logs" / "server.log").read_text()
    assert "Unexpected error" not in server_log  # no handler failed (they would answer UNKNOWN_SERVER_ERROR)
    assert "Exception when handling" not in server_log
