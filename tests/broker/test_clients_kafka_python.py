"""kafka-python 3.x against the reference broker, default client settings (issue 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker.data_plane_helpers import bootstrap, broker
from tests.polling import wait_until

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

N = 10_000
PARTITIONS = 3


def _value(i: int) -> bytes:
    return f"kp{i}:".encode() + bytes(range(i % 64))


@pytest.mark.timeout(150)
@pytest.mark.parametrize("compression", ["gzip"])  # snappy/zstd/lz4 need extra libs in kafka-python
def test_produce_and_consume_10k_keyed(tmp_path: Path, compression: str) -> None:
    with broker(tmp_path) as server:
        bs = bootstrap(server)
        admin = KafkaAdminClient(bootstrap_servers=bs)
        admin.create_topics([NewTopic("kp", PARTITIONS, 1)])
        assert "kp" in admin.list_topics()
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bs, compression_type=compression, linger_ms=5, acks="all")
        futures = [producer.send("kp", key=str(i).encode(), value=_value(i), partition=i % PARTITIONS)
                   for i in range(N)]
        producer.flush(60)
        metas = [f.get(30) for f in futures]
        producer.close()
        assert [m.offset for m in metas[:PARTITIONS]] == [0] * PARTITIONS
        consumer = KafkaConsumer(bootstrap_servers=bs, group_id="kp-group", enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        tps = [TopicPartition("kp", q) for q in range(PARTITIONS)]
        consumer.assign(tps)
        got: dict[int, list[tuple[int, bytes, bytes]]] = {}

        def consumed() -> bool:
            for tp, records in consumer.poll(timeout_ms=500, max_records=2000).items():
                got.setdefault(tp.partition, []).extend((r.offset, r.key, r.value) for r in records)
            return sum(map(len, got.values())) >= N

        wait_until(consumed, 90, lambda: f"{N} records (got {sum(map(len, got.values()))})")
        assert consumer.end_offsets(tps) == {tp: N // PARTITIONS + (1 if tp.partition < N % PARTITIONS else 0)
                                             for tp in tps}
        consumer.commit({tps[0]: __import__("kafka").OffsetAndMetadata(5, "", -1)})
        assert consumer.committed(tps[0]) == 5
        consumer.close()
        for q in range(PARTITIONS):
            want = [(str(i).encode(), _value(i)) for i in range(q, N, PARTITIONS)]
            assert [(k, v) for _o, k, v in got[q]] == want
            assert [o for o, _k, _v in got[q]] == list(range(len(want)))


@pytest.mark.timeout(90)
def test_subscribe_with_group_commits_and_resumes(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=2) as server:
        bs = bootstrap(server)
        producer = KafkaProducer(bootstrap_servers=bs, acks=0)  # acks=0: no answers, the connection stays up
        for i in range(500):
            producer.send("kps", key=b"k", value=str(i).encode(), partition=i % 2)
        producer.flush(30)
        producer.close()
        check = KafkaConsumer(bootstrap_servers=bs)
        wait_until(lambda: sum(check.end_offsets([TopicPartition("kps", 0), TopicPartition("kps", 1)]).values()) >= 500,
                   10, "the 500 records of kps (acks=0) in the log", interval=0.1)
        check.close()
        consumer = KafkaConsumer("kps", bootstrap_servers=bs, group_id="kps-g", auto_offset_reset="earliest",
                                 enable_auto_commit=False)
        seen: list[int] = []

        def first_400() -> bool:
            for records in consumer.poll(timeout_ms=300, max_records=400 - len(seen)).values():
                seen.extend(int(r.value) for r in records)
            return len(seen) >= 400

        wait_until(first_400, 40, lambda: f"400 records (got {len(seen)})")
        consumer.commit()
        assert sorted(consumer.assignment()) == [TopicPartition("kps", 0), TopicPartition("kps", 1)]
        consumer.close()
        resumed = KafkaConsumer("kps", bootstrap_servers=bs, group_id="kps-g", auto_offset_reset="earliest",
                                enable_auto_commit=False)
        rest: list[int] = []

        def the_rest() -> bool:
            for records in resumed.poll(timeout_ms=300).values():
                rest.extend(int(r.value) for r in records)
            return len(seen) + len(rest) >= 500

        wait_until(the_rest, 40, lambda: f"the other {500 - len(seen)} records (got {len(rest)})")
        resumed.close()
        assert sorted(seen + rest) == list(range(500))  # resumed from the committed offsets: nothing twice
