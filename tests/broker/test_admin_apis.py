"""The admin APIs with real clients against one reference broker (confluent-kafka, kafka-python, aiokafka): what
each API is for, done the way applications do it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.broker.data_plane_helpers import bootstrap, broker
from tests.polling import wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete  # noqa: E402
from aiokafka.admin import NewPartitions as AioNewPartitions  # noqa: E402
from confluent_kafka import Consumer, ElectionType, KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka import TopicPartition as CTopicPartition  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import (  # noqa: E402
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import NewPartitions as KNewPartitions  # noqa: E402
from kafka.admin import ResourceType as KResourceType  # noqa: E402
from kafka.errors import SecurityDisabledError  # noqa: E402
from kafka.structs import TopicPartition as KTopicPartition  # noqa: E402
from kafka.structs import TopicPartitionReplica  # noqa: E402

SECURITY_DISABLED = 54
#: How long a client may take for one admin round trip on a loaded 2-core machine.
CALL_TIMEOUT_S = 30.0


def _create(bs: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(CALL_TIMEOUT_S)


def _produce(bs: str, topic: str, n: int, partition: int = 0) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=partition)
    assert p.flush(CALL_TIMEOUT_S) == 0


def _consume_from_start(bs: str, topic: str, partition: int, want: int) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{topic}-{partition}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.assign([CTopicPartition(topic, partition, confluent_kafka.OFFSET_BEGINNING)])
        got: list[tuple[int, bytes]] = []

        def consumed() -> bool:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.value()))
            return len(got) >= want

        wait_until(consumed, CALL_TIMEOUT_S, lambda: f"{want} records of {topic}-{partition} (got {len(got)})")
        return got
    finally:
        c.close()


# ------------------------------------------------------------------------------------------------------ ACLs
@pytest.mark.timeout(60)
def test_acl_calls_answer_security_disabled_to_every_client(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        admin = AdminClient({"bootstrap.servers": bs})
        binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)
        any_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        for future in (admin.create_acls([binding])[binding], admin.delete_acls([any_filter])[any_filter]):
            with pytest.raises(KafkaException) as info:
                future.result(CALL_TIMEOUT_S)
            assert info.value.args[0].code() == KafkaError.SECURITY_DISABLED
        # librdkafka makes no error of DescribeAcls' top-level SECURITY_DISABLED: no ACLs (as against Kafka)
        assert admin.describe_acls(any_filter).result(CALL_TIMEOUT_S) == []

        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                      ResourcePattern(KResourceType.TOPIC, "t"))
            created = kp.create_acls([acl])
            assert created == {"succeeded": [], "failed": [SecurityDisabledError]}
            with pytest.raises(SecurityDisabledError):
                kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                           ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY)))
        finally:
            kp.close()


# ------------------------------------------------------------------------------------------------------ DeleteRecords
@pytest.mark.timeout(90)
def test_delete_records_then_consumers_start_at_the_new_log_start(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _create(bs, "dr", 2)
        _produce(bs, "dr", 100, partition=0)
        _produce(bs, "dr", 100, partition=1)

        admin = AdminClient({"bootstrap.servers": bs})

        [result] = admin.delete_records([CTopicPartition("dr", 0, 40)]).values()
        assert result.result(CALL_TIMEOUT_S).low_watermark == 40
        assert _consume_from_start(bs, "dr", 0, 60) == [(o, str(o).encode()) for o in range(40, 100)]

        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            answer = kp.delete_records({KTopicPartition("dr", 1): 70})
            assert answer[KTopicPartition("dr", 1)]["low_watermark"] == 70
            with pytest.raises(kafka.errors.OffsetOutOfRangeError):  # above the high watermark
                kp.delete_records({KTopicPartition("dr", 1): 1000})
        finally:
            kp.close()

        async def aio() -> dict[object, int]:
            client = AIOKafkaAdminClient(bootstrap_servers=bs)
            await client.start()
            try:
                return await client.delete_records({aiokafka.TopicPartition("dr", 1): RecordsToDelete(90)})
            finally:
                await client.close()

        assert asyncio.run(aio()) == {aiokafka.TopicPartition("dr", 1): 90}
        assert _consume_from_start(bs, "dr", 1, 10) == [(o, str(o).encode()) for o in range(90, 100)]


# ------------------------------------------------------------------------------------------------------ log dirs
@pytest.mark.timeout(60)
def test_describe_log_dirs_shows_partition_sizes_and_alter_keeps_replicas_in_the_one_dir(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _create(bs, "ld", 2)
        _produce(bs, "ld", 50, partition=1)
        log_dir = str((tmp_path / "data").resolve())
        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            [described] = kp.describe_log_dirs()
            assert described["broker"] == 1
            [result] = described["log_dirs"]
            assert (result["error_code"], result["log_dir"]) == (0, log_dir)
            [topic] = [t for t in result["topics"] if t["name"] == "ld"]
            assert [(p["partition_index"], p["offset_lag"], p["is_future_key"]) for p in topic["partitions"]] == [
                (0, 0, False), (1, 0, False)]
            sizes = [p["partition_size"] for p in topic["partitions"]]
            assert sizes[0] == 0 < sizes[1]

            moved = kp.alter_replica_log_dirs({TopicPartitionReplica("ld", 0, 1): log_dir,
                                               TopicPartitionReplica("ld", 1, 1): str(tmp_path / "elsewhere"),
                                               TopicPartitionReplica("nope", 0, 1): log_dir})
            assert moved == {TopicPartitionReplica("ld", 0, 1): kafka.errors.NoError,
                             TopicPartitionReplica("ld", 1, 1): kafka.errors.LogDirNotFoundError,
                             TopicPartitionReplica("nope", 0, 1): kafka.errors.ReplicaNotAvailableError}
        finally:
            kp.close()


# ------------------------------------------------------------------------------------------------------ partitions
@pytest.mark.timeout(90)
def test_create_partitions_then_produce_and_consume_them(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _create(bs, "cp", 1)
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_partitions([NewPartitions("cp", 2)])["cp"].result(CALL_TIMEOUT_S)
        with pytest.raises(KafkaException) as info:  # not an increase
            admin.create_partitions([NewPartitions("cp", 2)])["cp"].result(CALL_TIMEOUT_S)
        assert info.value.args[0].code() == KafkaError.INVALID_PARTITIONS

        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            kp.create_partitions({"cp": KNewPartitions(3)})
        finally:
            kp.close()

        async def aio() -> None:
            client = AIOKafkaAdminClient(bootstrap_servers=bs)
            await client.start()
            try:
                await client.create_partitions({"cp": AioNewPartitions(4)})
            finally:
                await client.close()

        asyncio.run(aio())
        assert len(admin.list_topics("cp", timeout=CALL_TIMEOUT_S).topics["cp"].partitions) == 4
        for q in (1, 2, 3):
            _produce(bs, "cp", 5, partition=q)
            assert _consume_from_start(bs, "cp", q, 5) == [(o, str(o).encode()) for o in range(5)]


@pytest.mark.timeout(60)
def test_one_broker_elects_nothing_and_reassigns_only_to_itself(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _create(bs, "el", 1)
        admin = AdminClient({"bootstrap.servers": bs})
        answer = admin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition("el", 0), CTopicPartition("nope", 0)])
        results = answer.result(CALL_TIMEOUT_S)
        assert results[CTopicPartition("el", 0)].code() == KafkaError.ELECTION_NOT_NEEDED
        assert results[CTopicPartition("nope", 0)].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert admin.elect_leaders(ElectionType.UNCLEAN, None).result(CALL_TIMEOUT_S) == {}

        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            assert kp.list_partition_reassignments() == {}
            el0 = KTopicPartition("el", 0)
            assert kp.alter_partition_reassignments({el0: [1]}) == {el0: None}  # already there: done at once
            assert kp.alter_partition_reassignments({el0: [1, 2]}) == {  # broker 2 does not exist
                el0: kafka.errors.InvalidReplicationAssignmentError}
            assert kp.alter_partition_reassignments({el0: None}) == {el0: kafka.errors.NoReassignmentInProgressError}
        finally:
            kp.close()


# ------------------------------------------------------------------------------------------------------ transactions
#: A refused transactional init must fail long before the clients' 60 s default timeouts.
FAST_S = 10.0


@pytest.mark.timeout(60)
def test_transactional_producer_init_fails_fast_with_kafkas_error(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        started = time.monotonic()
        producer = Producer({"bootstrap.servers": bs, "transactional.id": "tx-1"})
        with pytest.raises(KafkaException) as info:
            producer.init_transactions(30)
        assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert time.monotonic() - started < FAST_S

        started = time.monotonic()
        kp = kafka.KafkaProducer(bootstrap_servers=bs, transactional_id="tx-2")
        try:
            with pytest.raises(kafka.errors.TransactionalIdAuthorizationFailedError):
                kp.init_transactions()
        finally:
            kp.close(timeout=5)
        assert time.monotonic() - started < FAST_S

        idempotent = Producer({"bootstrap.servers": bs, "enable.idempotence": True})  # still served
        idempotent.produce("tx-free", value=b"v")
        assert idempotent.flush(CALL_TIMEOUT_S) == 0
