"""kafka-python 3.x against the reference broker, default client settings (issue 3)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.broker.data_plane_helpers import bootstrap, broker

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
        n, end = 0, time.monotonic() + 90
        while n < N and time.monotonic() < end:
            for tp, records in consumer.poll(timeout_ms=500, max_records=2000).items():
                for r in records:
                    got.setdefault(tp.partition, []).append((r.offset, r.key, r.value))
                    n += 1
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
        deadline = time.monotonic() + 10
        check = KafkaConsumer(bootstrap_servers=bs)
        while time.monotonic() < deadline and sum(check.end_offsets(
                [TopicPartition("kps", 0), TopicPartition("kps", 1)]).values()) < 500:
            time.sleep(0.1)
        check.close()
        consumer = KafkaConsumer("kps", bootstrap_servers=bs, group_id="kps-g", auto_offset_reset="earliest",
                                 enable_auto_commit=False)
        seen: list[int] = []
        end = time.monotonic() + 40
        while len(seen) < 400 and time.monotonic() < end:
            for records in consumer.poll(timeout_ms=300, max_records=400 - len(seen)).values():
                seen += [int(r.value) for r in records]
        consumer.commit()
        assert sorted(consumer.assignment()) == [TopicPartition("kps", 0), TopicPartition("kps", 1)]
        consumer.close()
        resumed = KafkaConsumer("kps", bootstrap_servers=bs, group_id="kps-g", auto_offset_reset="earliest",
                                enable_auto_commit=False)
        rest: list[int] = []
        end = time.monotonic() + 40
        while len(seen) + len(rest) < 500 and time.monotonic() < end:
            for records in resumed.poll(timeout_ms=300).values():
                rest += [int(r.value) for r in records]
        resumed.close()
        assert sorted(seen + rest) == list(range(500))  # resumed from the committed offsets: nothing twice
