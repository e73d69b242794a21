"""confluent-kafka (librdkafka 2.x) against the reference broker, default client settings (issue 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker.data_plane_helpers import bootstrap, broker
from tests.polling import wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

N = 10_000
PARTITIONS = 4


def _value(i: int) -> bytes:
    return (f"v{i}-" + "x" * (i % 200)).encode() + bytes([i % 256])


def _produce(bs: str, topic: str, compression: str, acks: str) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": acks, "linger.ms": 5, "compression.type": compression})
    errors: list[object] = []
    for i in range(N):
        p.produce(topic, key=str(i).encode(), value=_value(i), partition=i % PARTITIONS,
                  on_delivery=lambda e, _m: None if e is None else errors.append(e))
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:3]


def _check(got: dict[int, list[tuple[int, bytes, bytes]]]) -> None:
    for part in range(PARTITIONS):
        expected = [(str(i).encode(), _value(i)) for i in range(part, N, PARTITIONS)]
        assert [(k, v) for _o, k, v in got.get(part, [])] == expected, f"partition {part}"
        offsets = [o for o, _k, _v in got[part]]
        assert offsets == list(range(len(expected)))


def _consume(c: Consumer, total: int) -> dict[int, list[tuple[int, bytes, bytes]]]:
    got: dict[int, list[tuple[int, bytes, bytes]]] = {}
    n = [0]

    def consumed() -> bool:
        for m in c.consume(1000, 0.5):
            assert m.error() is None, m.error()
            got.setdefault(int(m.partition() or 0), []).append((int(m.offset() or 0), m.key() or b"", m.value() or b""))
            n[0] += 1
        return n[0] >= total

    wait_until(consumed, 60, lambda: f"{total} records (got {n[0]})")
    return got


@pytest.mark.timeout(120)
def test_admin_produce_lz4_acks_all_and_assign_consume(tmp_path: Path) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        admin = AdminClient({"bootstrap.servers": bs})
        for f in admin.create_topics([NewTopic("cfk", num_partitions=PARTITIONS, replication_factor=1)]).values():
            f.result(30)
        again = admin.create_topics([NewTopic("cfk", num_partitions=1, replication_factor=1)])
        with pytest.raises(Exception, match="already exists"):
            again["cfk"].result(30)
        md = admin.list_topics(timeout=10)
        assert len(md.topics["cfk"].partitions) == PARTITIONS
        assert md.topics["cfk"].partitions[0].leader == 1
        _produce(bs, "cfk", "lz4", "all")
        c = Consumer({"bootstrap.servers": bs, "group.id": "g-assign", "enable.auto.commit": False})
        c.assign([TopicPartition("cfk", q, 0) for q in range(PARTITIONS)])
        got = _consume(c, N)
        # commit + committed round trip (OffsetCommit / OffsetFetch), then watermarks (ListOffsets)
        c.commit(offsets=[TopicPartition("cfk", q, N // PARTITIONS) for q in range(PARTITIONS)], asynchronous=False)
        committed = c.committed([TopicPartition("cfk", q) for q in range(PARTITIONS)], timeout=10)
        assert [t.offset for t in committed] == [N // PARTITIONS] * PARTITIONS
        assert c.get_watermark_offsets(TopicPartition("cfk", 2), timeout=10) == (0, N // PARTITIONS)
        c.close()
        _check(got)


@pytest.mark.timeout(120)
def test_subscribe_with_group_id_gzip_auto_created_topic(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        _produce(bs, "auto", "gzip", "1")  # Metadata auto-creates "auto" with num.partitions
        c = Consumer({"bootstrap.servers": bs, "group.id": "g-sub", "auto.offset.reset": "earliest"})
        c.subscribe(["auto"])
        got = _consume(c, N)
        admin = AdminClient({"bootstrap.servers": bs})
        listed = admin.list_consumer_groups().result(10)
        assert "g-sub" in [g.group_id for g in listed.valid]
        desc = admin.describe_consumer_groups(["g-sub"])["g-sub"].result(10)
        assert desc.state.name == "STABLE"
        assert len(desc.members) == 1
        assigned = {tp.partition for tp in desc.members[0].assignment.topic_partitions}
        assert assigned == set(range(PARTITIONS))  # the client leader's range assignment, via SyncGroup
        c.close()
        _check(got)
        # the group's auto-committed offsets were stored; a new member resumes from them
        c2 = Consumer({"bootstrap.servers": bs, "group.id": "g-sub", "auto.offset.reset": "earliest"})
        committed = c2.committed([TopicPartition("auto", q) for q in range(PARTITIONS)], timeout=10)
        c2.close()
        assert [t.offset for t in committed] == [N // PARTITIONS] * PARTITIONS


@pytest.mark.timeout(60)
def test_unknown_topic_without_auto_creation(tmp_path: Path) -> None:
    with broker(tmp_path, auto__create__topics__enable="false") as server:
        bs = bootstrap(server)
        p = Producer({"bootstrap.servers": bs, "message.timeout.ms": 2000})
        errors: list[object] = []
        p.produce("nope", b"x", on_delivery=lambda e, _m: errors.append(e))
        p.flush(10)
        assert len(errors) == 1
        assert errors[0] is not None
        assert "nope" not in AdminClient({"bootstrap.servers": bs}).list_topics(timeout=10).topics


@pytest.mark.timeout(60)
def test_incremental_alter_configs_applied_live_persisted_and_reloaded(tmp_path: Path) -> None:
    res = ConfigResource(ResourceType.BROKER, "1")
    with broker(tmp_path) as server:
        admin = AdminClient({"bootstrap.servers": bootstrap(server)})
        res.add_incremental_config(ConfigEntry("max.connections.per.ip", "77",
                                               incremental_operation=AlterConfigOpType.SET))
        admin.incremental_alter_configs([res])[res].result(10)
        assert server.socket_server is not None
        assert server.socket_server.quotas.max_for_ip("127.0.0.1") == 77
        described = admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
        entries = next(iter(described.values())).result(10)
        assert entries["max.connections.per.ip"].value == "77"
        assert entries["max.connections.per.ip"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert entries["broker.id"].is_read_only
        bad = ConfigResource(ResourceType.BROKER, "1")
        bad.add_incremental_config(ConfigEntry("log.dirs", "/x", incremental_operation=AlterConfigOpType.SET))
        with pytest.raises(Exception, match="dynamically"):
            admin.incremental_alter_configs([bad])[bad].result(10)
        del admin
    log = (tmp_path / "logs" / "server.log").read_text()
    assert "Processing override for entityPath: brokers/1 with config: HashMap(max.connections.per.ip -> 77)" in log
    with broker(tmp_path) as server:  # persisted, re-applied at start
        assert server.socket_server is not None
        assert server.socket_server.quotas.max_for_ip("127.0.0.1") == 77


@pytest.mark.timeout(90)
def test_two_members_split_the_partitions_and_one_takes_over_after_a_leave(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        p = Producer({"bootstrap.servers": bs})
        for i in range(400):
            p.produce("split", str(i).encode(), partition=i % PARTITIONS)
        assert p.flush(10) == 0
        members = [Consumer({"bootstrap.servers": bs, "group.id": "g-split", "auto.offset.reset": "earliest"})
                   for _ in range(2)]
        for c in members:
            c.subscribe(["split"])
        seen: list[int] = []

        def split() -> bool:
            if all(len(c.assignment()) == 2 for c in members) and len(seen) >= 400:
                return True
            for c in members:
                seen.extend(int(m.value() or b"-1") for m in c.consume(100, 0.1) if m.error() is None)
            return False

        wait_until(split, 30, lambda: f"two partitions each and 400 records (assignments "
                                      f"{[sorted(tp.partition for tp in c.assignment()) for c in members]}, "
                                      f"{len(seen)} records)")
        parts = [sorted(tp.partition for tp in c.assignment()) for c in members]
        assert sorted(parts[0] + parts[1]) == list(range(PARTITIONS))
        assert len(parts[0]) == len(parts[1]) == 2
        assert sorted(set(seen)) == list(range(400))
        members[0].close()  # LeaveGroup: the other member rejoins and gets everything
        def rejoined() -> bool:
            members[1].poll(0.1)
            return len(members[1].assignment()) == PARTITIONS

        wait_until(rejoined, 30, "every partition assigned to the member left")
        assert sorted(tp.partition for tp in members[1].assignment()) == list(range(PARTITIONS))
        members[1].close()


@pytest.mark.timeout(90)
def test_idempotent_producer_snappy(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "compression.type": "snappy",
                      "linger.ms": 5})
        errors: list[object] = []
        for i in range(N):
            p.produce("idem", key=str(i).encode(), value=_value(i), partition=i % PARTITIONS,
                      on_delivery=lambda e, _m: None if e is None else errors.append(e))
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(60) == 0
        assert not errors, errors[:3]
        c = Consumer({"bootstrap.servers": bs, "group.id": "g-idem", "enable.auto.commit": False})
        c.assign([TopicPartition("idem", q, 0) for q in range(PARTITIONS)])
        got = _consume(c, N)
        c.close()
        _check(got)  # exactly once each, in order: no duplicate from a retried batch
