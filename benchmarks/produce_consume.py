"""Data-plane throughput with confluent-kafka on loopback: produce (acks=1, acks=all) and consume, broker CPU.

One broker child process (``planewatch broker``, request log off as in Kafka's default), one topic with PARTITIONS
partitions. For each acks mode a confluent-kafka Producer (linger.ms=5, no compression, 100-byte values) sends
MESSAGES messages as fast as librdkafka takes them; then a Consumer (assign(), default fetch settings) reads
everything back. Printed per phase: messages/s, MB/s, Produce/Fetch requests the client sent (librdkafka
statistics ``tx`` of the broker connection), broker CPU seconds (psutil: user+system of the broker process) and
broker CPU per request and per 1000 messages, and the client's own CPU, to see which side is the bottleneck.

Bounded: MESSAGES per phase, each phase capped at PHASE_TIMEOUT_S.
Run: .venv/bin/python -m benchmarks.produce_consume [messages]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import psutil

from benchmarks.broker_support import broker_process

MESSAGES = 300_000
PARTITIONS = 4
VALUE = b"x" * 100
PHASE_TIMEOUT_S = 120.0


def _broker_tx(stats: dict[str, Any]) -> int:
    return sum(int(b.get("tx", 0)) for name, b in stats.get("brokers", {}).items() if "bootstrap" not in name)


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def produce_phase(bs: str, topic: str, acks: str, n: int, broker: psutil.Process) -> dict[str, float]:
    from confluent_kafka import Producer

    stats: list[dict[str, Any]] = []
    p = Producer({"bootstrap.servers": bs, "acks": acks, "linger.ms": 5, "statistics.interval.ms": 500,
                  "stats_cb": lambda s: stats.append(json.loads(s))})
    p.list_topics(topic, timeout=10)
    delivered = [0]
    failed = [0]

    def done(err: Any, _msg: Any) -> None:
        if err is None:
            delivered[0] += 1
        else:
            failed[0] += 1

    me = psutil.Process()
    cpu0, my0, t0 = _cpu(broker), _cpu(me), time.perf_counter()
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    i = 0
    while i < n and time.monotonic() < deadline:
        try:
            p.produce(topic, VALUE, partition=i % PARTITIONS, on_delivery=done)
            i += 1
        except BufferError:
            p.poll(0.005)
        if i % 10_000 == 0:
            p.poll(0)
    p.flush(PHASE_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    cpu, mine = _cpu(broker) - cpu0, _cpu(me) - my0
    time.sleep(0.6)
    p.poll(0)
    requests = _broker_tx(stats[-1]) if stats else 0
    return {"messages": delivered[0], "failed": failed[0], "seconds": elapsed, "msg_s": delivered[0] / elapsed,
            "mb_s": delivered[0] * len(VALUE) / elapsed / 1e6, "requests": requests, "broker_cpu_s": cpu,
            "client_cpu_s": mine}


def consume_phase(bs: str, topic: str, total: int, broker: psutil.Process) -> dict[str, float]:
    from confluent_kafka import Consumer, TopicPartition

    stats: list[dict[str, Any]] = []
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench", "enable.auto.commit": False,
                  "statistics.interval.ms": 500, "stats_cb": lambda s: stats.append(json.loads(s))})
    c.assign([TopicPartition(topic, q, 0) for q in range(PARTITIONS)])
    me = psutil.Process()
    cpu0, my0, t0 = _cpu(broker), _cpu(me), time.perf_counter()
    got, deadline = 0, time.monotonic() + PHASE_TIMEOUT_S
    while got < total and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(10_000, 0.5) if m.error() is None)
    elapsed = time.perf_counter() - t0
    cpu, mine = _cpu(broker) - cpu0, _cpu(me) - my0
    time.sleep(0.6)
    c.poll(0)
    requests = _broker_tx(stats[-1]) if stats else 0
    c.close()
    return {"messages": got, "failed": total - got, "seconds": elapsed, "msg_s": got / elapsed,
            "mb_s": got * len(VALUE) / elapsed / 1e6, "requests": requests, "broker_cpu_s": cpu,
            "client_cpu_s": mine}


def _print(name: str, r: dict[str, float]) -> None:
    per_req = r["broker_cpu_s"] / r["requests"] * 1e3 if r["requests"] else float("nan")
    per_k = r["broker_cpu_s"] / max(r["messages"], 1) * 1e6
    print(f"{name:<14} {r['messages']:>8.0f} msgs ({r['failed']:.0f} failed) in {r['seconds']:6.2f} s  "
          f"{r['msg_s']:>9.0f} msg/s  {r['mb_s']:6.1f} MB/s  requests {r['requests']:>6.0f}  "
          f"broker CPU {r['broker_cpu_s']:5.2f} s ({per_req:.3f} ms/request, {per_k:.1f} ms/1000 msgs)  "
          f"client CPU {r['client_cpu_s']:5.2f} s")


def main(n: int = MESSAGES) -> None:
    """Run the three phases and print one line each."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    props = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    with broker_process(props) as (ports, pid):
        bs = f"127.0.0.1:{ports['PLAINTEXT']}"
        broker = psutil.Process(pid)
        admin = AdminClient({"bootstrap.servers": bs})
        for acks in ("1", "all"):
            for f in admin.create_topics([NewTopic(f"bench-acks-{acks}", PARTITIONS, 1)]).values():
                f.result(30)
        print(f"produce/consume benchmark: {n} x {len(VALUE)}-byte messages, {PARTITIONS} partitions, linger.ms=5, "
              "confluent-kafka on 127.0.0.1")
        results = {acks: produce_phase(bs, f"bench-acks-{acks}", acks, n, broker) for acks in ("1", "all")}
        _print("produce acks=1", results["1"])
        _print("produce acks=all", results["all"])
        _print("consume", consume_phase(bs, "bench-acks-1", int(results["1"]["messages"]), broker))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else MESSAGES)
