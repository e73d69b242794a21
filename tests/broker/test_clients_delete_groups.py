"""DeleteGroups with real clients against one reference broker: a group with members is refused (NON_EMPTY_GROUP),
an empty group is deleted with its committed offsets (its next consumer starts over), an unknown group is
GROUP_ID_NOT_FOUND; confluent-kafka and kafka-python delete, aiokafka sees the group gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.broker.data_plane_helpers import Wire, bootstrap, broker
from tests.polling import wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")
from aiokafka.admin import AIOKafkaAdminClient  # noqa: E402
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka import TopicPartition as CTopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402
from kafka import KafkaAdminClient, KafkaConsumer  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402
from kafka.structs import TopicPartition as KTopicPartition  # noqa: E402

from broker.protocol import ApiKey  # noqa: E402
from broker.protocol.error_codes import ErrorCode  # noqa: E402

pytestmark = pytest.mark.integration

MESSAGES = 20
#: How long a client may take for one round trip (or a group to settle) on a loaded 2-core machine.
CALL_TIMEOUT_S = 30.0


def _topic_with_messages(bs: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})  # held: a collected AdminClient fails its pending futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(CALL_TIMEOUT_S)
    p = Producer({"bootstrap.servers": bs})
    for i in range(MESSAGES):
        p.produce(topic, str(i).encode())
    assert p.flush(CALL_TIMEOUT_S) == 0


def _consume_all(consumer: Consumer) -> int:
    seen = [0]

    def consumed() -> bool:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            seen[0] += 1
        return seen[0] >= MESSAGES

    wait_until(consumed, CALL_TIMEOUT_S, lambda: f"{MESSAGES} records (got {seen[0]})")
    return seen[0]


def _delete_error(admin: AdminClient, group: str) -> int:
    """The error code confluent's delete_consumer_groups gets for ``group`` (0: deleted)."""
    try:
        admin.delete_consumer_groups([group], request_timeout=CALL_TIMEOUT_S)[group].result(CALL_TIMEOUT_S)
    except KafkaException as exc:
        return int(exc.args[0].code())
    return 0


@pytest.mark.timeout(180)
def test_confluent_deletes_an_empty_group_and_its_next_consumer_starts_over(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _topic_with_messages(bs, "dg")
        conf = {"bootstrap.servers": bs, "group.id": "dg-group", "auto.offset.reset": "earliest",
                "enable.auto.commit": False}
        consumer = Consumer(conf)
        consumer.subscribe(["dg"])
        assert _consume_all(consumer) == MESSAGES
        consumer.commit(asynchronous=False)
        admin = AdminClient({"bootstrap.servers": bs})
        assert _delete_error(admin, "dg-group") == KafkaError.NON_EMPTY_GROUP  # the member is still there
        consumer.close()  # LeaveGroup: the group is empty, its offsets stay
        assert _delete_error(admin, "dg-group") == 0
        assert _delete_error(admin, "dg-group") == KafkaError.GROUP_ID_NOT_FOUND
        again = Consumer(conf)
        try:
            [tp] = again.committed([CTopicPartition("dg", 0)], timeout=CALL_TIMEOUT_S)
            assert tp.offset < 0  # no committed offset any more
            again.subscribe(["dg"])
            assert _consume_all(again) == MESSAGES  # starts over from auto.offset.reset
        finally:
            again.close()


@pytest.mark.timeout(180)
def test_kafka_python_deletes_a_simple_consumers_offsets_and_aiokafka_sees_the_group_gone(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        _topic_with_messages(bs, "dk")
        tp = KTopicPartition("dk", 0)
        consumer = KafkaConsumer(bootstrap_servers=bs, group_id="dk-group", enable_auto_commit=False)
        try:
            consumer.assign([tp])
            consumer.commit({tp: OffsetAndMetadata(7, "", -1)})
        finally:
            consumer.close()
        admin = KafkaAdminClient(bootstrap_servers=bs)
        try:
            assert admin.list_group_offsets("dk-group")["dk-group"][tp].offset == 7
            assert admin.delete_groups(["dk-group", "dk-never"]) == {"dk-group": "OK",
                                                                    "dk-never": "GroupIdNotFoundError"}
            assert tp not in admin.list_group_offsets("dk-group")["dk-group"]
        finally:
            admin.close()

        async def listed() -> list[str]:
            aio = AIOKafkaAdminClient(bootstrap_servers=bs)
            await aio.start()
            try:
                return [g[0] for g in await aio.list_consumer_groups()]
            finally:
                await aio.close()

        assert "dk-group" not in asyncio.run(listed())


def test_delete_groups_on_the_wire_answers_per_group(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        try:
            answer = w.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["none", ""]})
        finally:
            w.close()
    assert [(r["group_id"], r["error_code"]) for r in answer["results"]] == [
        ("none", ErrorCode.GROUP_ID_NOT_FOUND), ("", ErrorCode.INVALID_GROUP_ID)]
