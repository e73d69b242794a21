"""kill -9 in the middle of an acks=all produce stream: every acknowledged message survives (issue 3)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.broker.data_plane_helpers import BrokerProcess, free_port
from tests.polling import wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
PARTITIONS = 3


@pytest.mark.timeout(120)
def test_kill_9_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    port = free_port()
    proc = BrokerProcess(tmp_path, port, f"num.partitions={PARTITIONS}\n")
    proc.start()
    acked: dict[tuple[int, int], bytes] = {}
    lock = threading.Lock()
    try:
        bs = f"127.0.0.1:{port}"
        p = confluent_kafka.Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 2,
                                      "message.timeout.ms": 5000, "compression.type": "lz4"})

        def done(err: Any, msg: Any) -> None:
            if err is None:
                with lock:
                    acked[(msg.partition(), msg.offset())] = msg.value()

        stop = threading.Event()
        produced = [0]

        def stream() -> None:
            i = 0
            while not stop.is_set() and i < 2_000_000:
                try:
                    p.produce("crash", key=str(i).encode(), value=f"c{i}-{'q' * (i % 97)}".encode(),
                              partition=i % PARTITIONS, on_delivery=done)
                    i += 1
                except BufferError:
                    p.poll(0.01)
                if i % 200 == 0:
                    p.poll(0)
            produced[0] = i
            p.flush(10)  # after the kill: the in-flight rest fail (not acknowledged)

        th = threading.Thread(target=stream)
        th.start()
        wait_until(lambda: len(acked) >= 5000, 30, "5000 acknowledged records")
        proc.kill()  # SIGKILL while the stream is running: produce requests in flight
        time.sleep(0.5)
        stop.set()
        th.join(30)
        assert not th.is_alive()
        with lock:
            snapshot = dict(acked)
        i = produced[0]
        assert len(snapshot) >= 5000
        assert i > len(snapshot)  # some were in flight when the broker died
        proc.start()
        c = confluent_kafka.Consumer({"bootstrap.servers": bs, "group.id": "crash", "enable.auto.commit": False})
        c.assign([confluent_kafka.TopicPartition("crash", q, 0) for q in range(PARTITIONS)])
        got: dict[tuple[int, int], bytes] = {}
        highs = {q: c.get_watermark_offsets(confluent_kafka.TopicPartition("crash", q), timeout=10)[1]
                 for q in range(PARTITIONS)}

        def consumed() -> bool:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                got[(m.partition(), m.offset())] = m.value()
            return len(got) >= int(sum(highs.values()))

        wait_until(consumed, 40, lambda: f"the {sum(highs.values())} records in the log (got {len(got)})")
        c.close()
        missing = [k for k, v in snapshot.items() if got.get(k) != v]
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:3]}"
        # consistent log: offsets dense from 0 in every partition
        for q in range(PARTITIONS):
            offs = sorted(o for (pq, o) in got if pq == q)
            assert offs == list(range(len(offs)))
        log = (tmp_path / "logs" / "server.log").read_text()
        assert "Recovering unflushed segment" in log  # no clean-shutdown marker: recovery ran
    finally:
        proc.kill()
