"""Encode/decode throughput of the wire codec on the broker's heaviest control-plane messages.

Run: ``.venv/bin/python -m benchmarks.protocol_codec [--seconds S]``

Measures, for a Metadata v12 response describing 2,000 partitions (100 topics x 20 partitions, RF 3)
and a LeaderAndIsr request of 1,000 partitions (v2 classic and v6 flexible), plus the per-request cost of a
small Produce v9 (decode the request, encode the response; frame size is the request's): encode ops/s, decode
ops/s, MB/s and the frame size.  Each measurement runs for a bounded wall time (default 1 s); rates are
per CPU second of this process, so other work on the machine does not distort them much.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from broker.protocol import RequestHeader, decode_request, decode_response, encode_request, encode_response
from broker.protocol.records import build_batch, parse_batches

#: Wall-clock budget per measurement (seconds); keeps the whole run short on a shared 2-core machine.
DEFAULT_SECONDS = 1.0


def metadata_response(topics: int = 100, partitions: int = 20) -> dict[str, Any]:
    """A Metadata response body with ``topics * partitions`` partitions on 3 brokers."""
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": i, "host": f"broker-{i}.example", "port": 9092, "rack": None} for i in range(3)],
        "cluster_id": "planewatch-cluster",
        "controller_id": 0,
        "topics": [
            {
                "error_code": 0,
                "name": f"topic-{t:04d}",
                "topic_id": uuid.UUID(int=t + 1),
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": p % 3,
                        "leader_epoch": 5,
                        "replica_nodes": [p % 3, (p + 1) % 3, (p + 2) % 3],
                        "isr_nodes": [p % 3, (p + 1) % 3, (p + 2) % 3],
                        "offline_replicas": [],
                    }
                    for p in range(partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in range(topics)
        ],
    }


def leader_and_isr_request(topics: int = 50, partitions: int = 20) -> dict[str, Any]:
    """A LeaderAndIsr request body with ``topics * partitions`` partition states."""
    return {
        "controller_id": 1,
        "controller_epoch": 7,
        "broker_epoch": 4242,
        "type": 0,
        "topic_states": [
            {
                "topic_name": f"topic-{t:04d}",
                "topic_id": uuid.UUID(int=t + 1),
                "partition_states": [
                    {
                        "partition_index": p,
                        "controller_epoch": 7,
                        "leader": p % 3,
                        "leader_epoch": 12,
                        "isr": [0, 1, 2],
                        "partition_epoch": 31,
                        "replicas": [0, 1, 2],
                        "adding_replicas": [],
                        "removing_replicas": [],
                        "is_new": False,
                        "leader_recovery_state": 0,
                    }
                    for p in range(partitions)
                ],
            }
            for t in range(topics)
        ],
        "live_leaders": [{"broker_id": i, "host_name": f"broker-{i}", "port": 9093} for i in range(3)],
    }


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Operations per CPU second of this process (robust to other processes sharing the cores)."""
    fn()  # warm the compiled-codec cache
    n = 0
    wall_deadline = time.perf_counter() + seconds
    start = time.process_time()
    while True:
        fn()
        n += 1
        if time.perf_counter() >= wall_deadline:
            return n / max(time.process_time() - start, 1e-9)


def _report(name: str, size: int, enc: float, dec: float) -> None:
    print(
        f"{name:<44} frame {size / 1024:8.1f} KiB | encode {enc:8.1f} ops/s ({enc * size / 1e6:6.1f} MB/s)"
        f" | decode {dec:8.1f} ops/s ({dec * size / 1e6:6.1f} MB/s)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print one line per message."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, help="time budget per measurement")
    args = parser.parse_args(argv)

    md = metadata_response()
    header = RequestHeader(3, 12, 1, "bench")
    wire = encode_response(header, md)
    frame = wire[4:]
    _report(
        "Metadata v12 response, 2,000 partitions",
        len(wire),
        _rate(lambda: encode_response(header, md), args.seconds),
        _rate(lambda: decode_response(3, 12, frame), args.seconds),
    )
    lai = leader_and_isr_request()
    for version in (2, 6):
        wire = encode_request(4, version, 1, "1", lai)
        frame = wire[4:]
        _report(
            f"LeaderAndIsr v{version} request, 1,000 partitions",
            len(wire),
            _rate(lambda v=version: encode_request(4, v, 1, "1", lai), args.seconds),  # type: ignore[misc]
            _rate(lambda f=frame: decode_request(f), args.seconds),  # type: ignore[misc]
        )
    # Per-request overhead on the data plane: a small Produce v9 (5 records of 100 B) and its response.
    blob = build_batch([(b"k", b"v" * 100)] * 5)
    produce = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": blob}]}],
    }
    pframe = encode_request(0, 9, 1, "rdkafka", produce)[4:]
    pheader = RequestHeader(0, 9, 1, "rdkafka")
    presp = {"responses": [{"name": "t", "partition_responses": [{"index": 0, "base_offset": 5}]}]}
    _report(
        "Produce v9 (decode request / encode response)",
        len(pframe),
        _rate(lambda: encode_response(pheader, presp), args.seconds),
        _rate(lambda: decode_request(pframe), args.seconds),
    )
    # Record batch validation (length, magic, CRC-32C) of a 1 MB batch, as Produce handling does per partition.
    big = build_batch([(b"k", b"v" * 1000)] * 1000)
    rate = _rate(lambda: parse_batches(big), args.seconds)
    print(f"{'parse_batches, one 1 MB record batch':<44} {rate:10.1f} ops/s ({rate * len(big) / 1e6:8.1f} MB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
