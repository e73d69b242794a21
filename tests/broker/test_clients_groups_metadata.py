"""Real clients against the reference broker: the group protocol as Kafka 2.3+ runs it (static members, fencing,
commits during a rebalance), metadata details (cluster id, illegal topic names, ``__consumer_offsets``) and the
Kafka release clients infer from ApiVersions (issue 16, items 3-5)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.broker.data_plane_helpers import bootstrap, broker
from tests.polling import wait_until

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka import KafkaConsumer, OffsetAndMetadata  # noqa: E402
from kafka import TopicPartition as KpTopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.errors import CommitFailedError, UnknownMemberIdError  # noqa: E402

PARTITIONS = 4
#: How long a group may take to settle: a join/sync round (no initial rebalance delay in the test broker), with room
#: for a loaded machine.
SETTLE_S = 30.0


def _produce(bs: str, topic: str) -> None:
    p = Producer({"bootstrap.servers": bs})
    for i in range(PARTITIONS * 10):
        p.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    assert p.flush(10) == 0


def _static(bs: str, group: str, instance: str, revoked: list[str] | None = None) -> Any:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.instance.id": instance,
                  "session.timeout.ms": 30000, "auto.offset.reset": "earliest"})
    c.subscribe(["static"], on_revoke=lambda _c, parts: revoked.append(instance) if revoked is not None and parts
                else None)
    return c


def _polling(consumers: list[Any], done: Callable[[], bool]) -> Callable[[], bool]:
    """``done`` as a condition for wait_until that polls the (confluent-kafka) ``consumers`` each time it does not
    hold yet: their group protocol runs in poll."""
    def check() -> bool:
        if done():
            return True
        for c in consumers:
            c.poll(0.1)
        return False

    return check


def _assignments(*consumers: Any) -> str:
    return f"the assignment (each consumer's partitions: {[_parts(c) for c in consumers]})"


def _fenced_lines(request_log: Path) -> str:
    return "\n".join(line for line in request_log.read_text().splitlines() if '"errorCode":82' in line)


def _in_state(admin: Any, group: str, state: str) -> bool:
    return any(g["group_id"] == group for g in admin.list_groups(states_filter=[state]))


def _parts(c: Any) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


@pytest.mark.timeout(120)
def test_static_member_restarts_without_a_rebalance(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        _produce(bs, "static")
        revoked: list[str] = []
        a, b = _static(bs, "g-static", "a", revoked), _static(bs, "g-static", "b", revoked)
        wait_until(_polling([a, b], lambda: len(_parts(a)) == len(_parts(b)) == 2), SETTLE_S,
                   lambda: _assignments(a, b))
        before_a, before_b = _parts(a), _parts(b)
        # whichever member joined first gave up half its partitions to the other: only what follows counts
        revoked.clear()
        a.close()  # a static member sends no LeaveGroup: its place is kept until its session runs out
        a2 = _static(bs, "g-static", "a", revoked)
        wait_until(_polling([a2, b], lambda: len(_parts(a2)) == 2), SETTLE_S, lambda: _assignments(a2, b))
        assert (_parts(a2), _parts(b)) == (before_a, before_b)  # a's partitions came back to it
        for _ in range(20):  # b goes on polling: it is never asked to give anything up
            b.poll(0.05)
        assert "b" not in revoked  # ("a" revoked its own partitions when it closed)
        assert _parts(b) == before_b
        a2.close()
        b.close()


@pytest.mark.timeout(120)
def test_a_second_consumer_with_the_same_instance_id_fences_the_first(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        _produce(bs, "static")
        errors: list[Any] = []
        first = Consumer({"bootstrap.servers": bs, "group.id": "g-dup", "group.instance.id": "dup",
                          "session.timeout.ms": 30000, "heartbeat.interval.ms": 500, "error_cb": errors.append})
        first.subscribe(["static"])
        wait_until(_polling([first], lambda: len(_parts(first)) == PARTITIONS), SETTLE_S, lambda: _assignments(first))
        second = Consumer({"bootstrap.servers": bs, "group.id": "g-dup", "group.instance.id": "dup",
                           "session.timeout.ms": 30000, "heartbeat.interval.ms": 500})
        second.subscribe(["static"])
        wait_until(_polling([second], lambda: len(_parts(second)) == PARTITIONS), SETTLE_S,
                   lambda: _assignments(second))
        # the old instance's next heartbeat is answered FENCED_INSTANCE_ID (82); librdkafka 2.x logs it and does
        # not surface it through poll() or error_cb, so the broker's request log tells it
        request_log = tmp_path / "logs" / "kafka-request.log"
        wait_until(_polling([first], lambda: '"requestApiKeyName":"HEARTBEAT"' in _fenced_lines(request_log)),
                   SETTLE_S, lambda: f"a HEARTBEAT answered FENCED_INSTANCE_ID (client errors: {errors})")
        assert _parts(second) == list(range(PARTITIONS))
        second.close()
        first.close()


@pytest.mark.timeout(120)
def test_commit_while_the_group_prepares_a_rebalance_and_a_non_members_commit(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        _produce(bs, "reb")
        clients: list[Any] = []
        try:
            _commit_during_rebalance(bs, clients)
        finally:
            for client in clients:
                client.close()


def _commit_during_rebalance(bs: str, clients: list[Any]) -> None:
    member = KafkaConsumer(bootstrap_servers=bs, group_id="g-reb", enable_auto_commit=False,
                           session_timeout_ms=30000, heartbeat_interval_ms=3000)
    admin = KafkaAdminClient(bootstrap_servers=bs)
    clients += [member, admin]
    # kafka-python's leader assigns nothing when it joins before its first metadata answer names the topic, and an
    # empty assignment snapshot never makes it rejoin: learn the topic's partitions first, then subscribe
    wait_until(lambda: member.partitions_for_topic("reb"), SETTLE_S, "the partitions of reb", interval=0.1)
    member.subscribe(["reb"])

    def assigned() -> bool:  # kafka-python's group protocol runs in its poll too
        if member.assignment():
            return True
        member.poll(timeout_ms=100)
        return False

    wait_until(assigned, SETTLE_S, "an assignment of reb")
    assert len(member.assignment()) == PARTITIONS
    tp = KpTopicPartition("reb", 0)
    # a second member joins: the group prepares a rebalance until the first member rejoins (it does not poll)
    newcomer = Consumer({"bootstrap.servers": bs, "group.id": "g-reb"})
    clients.append(newcomer)
    newcomer.subscribe(["reb"])
    wait_until(_polling([newcomer], lambda: _in_state(admin, "g-reb", "PREPARING_REBALANCE")), SETTLE_S,
               "g-reb in PREPARING_REBALANCE")
    member.commit({tp: OffsetAndMetadata(7, "", -1)})  # accepted, as Kafka accepts it
    assert member.committed(tp) == 7
    # an assign() consumer of the same group commits with generation -1: the group has members
    outsider = KafkaConsumer(bootstrap_servers=bs, group_id="g-reb", enable_auto_commit=False)
    clients.append(outsider)
    outsider.assign([tp])
    with pytest.raises((CommitFailedError, UnknownMemberIdError)):
        outsider.commit({tp: OffsetAndMetadata(9, "", -1)})
    clients.remove(member)
    clients.remove(newcomer)
    member.close()
    newcomer.close()
    wait_until(lambda: _in_state(admin, "g-reb", "EMPTY"), SETTLE_S, "g-reb EMPTY", interval=0.1)
    outsider.commit({tp: OffsetAndMetadata(9, "", -1)})  # an empty group takes it
    assert outsider.committed(tp) == 9


@pytest.mark.timeout(120)
def test_cluster_id_is_generated_once_and_kept_across_restarts(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        with broker(tmp_path) as server:
            md = AdminClient({"bootstrap.servers": bootstrap(server)}).list_topics(timeout=10)
            ids.append(md.cluster_id)
    assert ids[0] == ids[1]
    assert ids[0] is not None
    assert len(ids[0]) == 22  # a UUID in base64url, as Kafka's
    assert f"cluster.id={ids[0]}" in (tmp_path / "data" / "meta.properties").read_text()


@pytest.mark.timeout(120)
def test_illegal_topic_names_and_the_internal_offsets_topic(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        admin = AdminClient({"bootstrap.servers": bs})
        futures = admin.create_topics([NewTopic("bad name!", 1, 1)], operation_timeout=10)
        with pytest.raises(ck.KafkaException) as refused:
            futures["bad name!"].result(15)
        assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
        # auto-creation: a legal name is created, an illegal one answered INVALID_TOPIC_EXCEPTION
        producer = Producer({"bootstrap.servers": bs, "allow.auto.create.topics": True})
        md = producer.list_topics("bad name!", timeout=10)
        assert md.topics["bad name!"].error.code() == KafkaError.TOPIC_EXCEPTION
        assert producer.list_topics("fine-auto", timeout=10).topics["fine-auto"].error is None
        # a consumer group makes the coordinator create __consumer_offsets, listed as internal
        c = Consumer({"bootstrap.servers": bs, "group.id": "g-internal", "auto.offset.reset": "earliest"})
        c.subscribe(["fine-auto"])
        wait_until(_polling([c], lambda: "__consumer_offsets" in admin.list_topics(timeout=10).topics), SETTLE_S,
                   "__consumer_offsets created")
        c.close()
        kp_admin = KafkaAdminClient(bootstrap_servers=bs)
        (offsets,) = kp_admin.describe_topics(["__consumer_offsets"])
        assert offsets["error_code"] == 0
        assert offsets["is_internal"] is True
        kp_admin.close()
        futures = admin.create_topics([NewTopic("__consumer_offsets", 1, 1)], operation_timeout=10)
        with pytest.raises(ck.KafkaException) as exists:
            futures["__consumer_offsets"].result(15)
        assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


@pytest.mark.timeout(60)
def test_clients_infer_the_configured_kafka_release(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap(server))
        assert consumer.config["api_version"] == (2, 8)  # the release the logs imitate (it inferred 3.0 before)
        consumer.close()
