"""Cost of the broker's control-request handling (KafkaApis, no sockets) and of the controller's UpdateMetadata fan-out.

Run: ``.venv/bin/python -m benchmarks.control_apis [--partitions 1000,5000] [--brokers 20]``

For each partition count: milliseconds per KafkaApis.handle of LeaderAndIsr v5 (all become-leader, then all
become-follower with a new leader epoch), UpdateMetadata v7 (3 live brokers), Metadata v12 for every topic with the
request log on (DEBUG: the KIP-673 JSON is built) and off. Then the controller side: building + serializing one
UpdateMetadata per broker (each with its own broker epoch) versus once for all brokers (the cacheable
UpdateMetadata with ``max_broker_epoch``; only the correlation id is patched per broker).
Each figure is the median of a few runs, bounded by a small wall-time budget so the whole run stays short.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.apis import KafkaApis
from broker.controller.channel import with_correlation_id
from broker.controller.requests import endpoints_of, update_metadata_body
from broker.log4j import Log4j
from broker.network.request import Request
from broker.protocol import ApiKey, encode_request, parse_request_header
from broker.state import BrokerState
from broker.state.model import CachedPartition

#: Runs per measurement and the wall-time budget per measurement (seconds).
RUNS = 5
BUDGET_S = 3.0


def _median_ms(fn: Callable[[], Any]) -> float:
    times: list[float] = []
    deadline = time.perf_counter() + BUDGET_S
    while len(times) < RUNS and (not times or time.perf_counter() < deadline):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _request(frame: bytes, listener: str = "PLAINTEXT") -> Request:
    return Request(0, "127.0.0.1:9092-127.0.0.1:1-0", listener, "PLAINTEXT", "127.0.0.1", frame,
                   parse_request_header(frame), time.monotonic_ns())


def _lai(partitions: int, leader: int, epoch: int, corr: int) -> bytes:
    topics = max(1, partitions // 50)
    states = [{"topic_name": f"topic-{t:04d}", "topic_id": uuid.UUID(int=t + 1), "partition_states": [
        {"partition_index": p, "controller_epoch": 5, "leader": leader, "leader_epoch": epoch, "isr": [1, 2, 3],
         "partition_epoch": epoch, "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [],
         "is_new": False} for p in range(partitions // topics)]} for t in range(topics)]
    body = {"controller_id": 1, "controller_epoch": 5, "broker_epoch": -1, "type": 0, "topic_states": states,
            "live_leaders": [{"broker_id": b, "host_name": "127.0.0.1", "port": 9090 + b} for b in (1, 2, 3)]}
    return encode_request(ApiKey.LEADER_AND_ISR, 5, corr, "1", body)[4:]


def _partitions(partitions: int) -> list[CachedPartition]:
    topics = max(1, partitions // 50)
    return [CachedPartition(f"topic-{t:04d}", p, 5, 1 + p % 3, 3, (1, 2, 3), 3, (1, 2, 3))
            for t in range(topics) for p in range(partitions // topics)]


def _brokers(n: int) -> list[Any]:
    return [endpoints_of(b, {"PLAINTEXT": ("127.0.0.1", 9090 + b)}) for b in range(1, n + 1)]


def broker_side(partitions: int, logs: Path) -> dict[str, float]:
    """ms per handle() for the control requests and Metadata at this partition count."""
    log4j = Log4j().configure(logs)
    try:
        state = BrokerState(1, log4j=log4j)
        apis = KafkaApis(state, advertised_listeners={"PLAINTEXT": ("127.0.0.1", 9091)}, log4j=log4j)
        um = update_metadata_body(7, controller_id=1, controller_epoch=5, broker_epoch=-1,
                                  partitions=_partitions(partitions), live_brokers=_brokers(3))
        um_frame = encode_request(ApiKey.UPDATE_METADATA, 7, 1, "1", um)[4:]
        out: dict[str, float] = {}
        out["UpdateMetadata v7"] = _median_ms(lambda: apis.handle(_request(um_frame)))
        epoch = iter(range(10, 10_000, 2))

        def leader_then_follower() -> tuple[float, float]:
            e = next(epoch)
            lead = _lai(partitions, 1, e, 7)
            follow = _lai(partitions, 2, e + 1, 8)
            t0 = time.perf_counter()
            apis.handle(_request(lead))
            t1 = time.perf_counter()
            apis.handle(_request(follow))
            return (t1 - t0) * 1000, (time.perf_counter() - t1) * 1000

        pairs = [leader_then_follower() for _ in range(3)]
        out["LeaderAndIsr v5 become-leader"] = statistics.median(p[0] for p in pairs)
        out["LeaderAndIsr v5 become-follower"] = statistics.median(p[1] for p in pairs)
        md = encode_request(ApiKey.METADATA, 12, 9, "c", {"topics": None, "allow_auto_topic_creation": False,
                                                            "include_topic_authorized_operations": False})[4:]
        out["Metadata v12 all topics, request log on"] = _median_ms(lambda: apis.handle(_request(md)))
        log4j.set_level("kafka.request.logger", "WARN")
        out["Metadata v12 all topics, request log off"] = _median_ms(lambda: apis.handle(_request(md)))
        return out
    finally:
        log4j.close()


def controller_fanout(partitions: int, brokers: int) -> dict[str, float]:
    """ms to build and serialize UpdateMetadata for every broker: per broker vs once (shared payload)."""
    parts, live = _partitions(partitions), _brokers(brokers)

    def per_broker() -> None:
        for b in range(1, brokers + 1):
            body = update_metadata_body(7, controller_id=1, controller_epoch=5, broker_epoch=100 + b,
                                        partitions=parts, live_brokers=live)
            encode_request(ApiKey.UPDATE_METADATA, 7, b, "1", body)

    def shared() -> None:
        body = update_metadata_body(7, controller_id=1, controller_epoch=5, broker_epoch=-1, partitions=parts,
                                    live_brokers=live, max_broker_epoch=100 + brokers)
        frame = encode_request(ApiKey.UPDATE_METADATA, 7, 0, "1", body)
        for b in range(1, brokers + 1):
            with_correlation_id(frame, b)

    return {f"UpdateMetadata to {brokers} brokers, one body per broker": _median_ms(per_broker),
            f"UpdateMetadata to {brokers} brokers, shared payload": _median_ms(shared)}


def main(argv: list[str] | None = None) -> int:
    """Print the numbers."""
    parser = argparse.ArgumentParser(prog="benchmarks.control_apis", description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1000,5000", help="comma-separated partition counts")
    parser.add_argument("--brokers", type=int, default=20, help="brokers in the UpdateMetadata fan-out")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.partitions.split(",") if x.strip()]
    with tempfile.TemporaryDirectory(prefix="pw-bench-control-") as tmp:
        for n in counts:
            print(f"-- {n} partitions: KafkaApis.handle, median ms per request")
            for name, ms in broker_side(n, Path(tmp) / f"logs-{n}").items():
                print(f"  {name:45s} {ms:9.2f} ms")
            for name, ms in controller_fanout(n, args.brokers).items():
                print(f"  {name:45s} {ms:9.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
