"""UpdateMetadata fan-out on the controller: the cached payload (one body, serialized once, max_broker_epoch) vs
per-broker payloads (one body per broker with its own broker epoch), for P partitions and B brokers, in one run.

    .venv/bin/python -m benchmarks.update_metadata_fanout [--partitions 100000] [--brokers 200] [--sample 3]

What is measured, with the functions the controller uses (``broker.controller.requests.update_metadata_body`` and
``broker.protocol.encode_request``, as ``ControlRequestSender.send_update_metadata`` / ``ControllerChannelManager``):

* cached: build one body and serialize it once (the same bytes then go to every broker with its correlation id
  patched): CPU time and bytes allocated (tracemalloc peak) are measured at full scale;
* per-broker: every broker gets its own body (the channel queues them all before the send threads drain them) and
  its own serialization. Building and serializing 200 bodies of 100,000 partitions takes many minutes in Python, so
  ``--sample`` brokers are measured at full scale and the total is that per-broker cost times B (marked
  ``extrapolated``); ``--sample`` equal to ``--brokers`` measures everything.

The seed's claim: memory proportional to partitions (cached) instead of partitions x brokers (per broker).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from typing import Any

from broker.controller.requests import endpoints_of, update_metadata_body
from broker.protocol import ApiKey, encode_request
from broker.state.model import CachedPartition, LiveBroker

VERSION = 7  # flexible: carries the max_broker_epoch tagged field


def _inputs(partitions: int, brokers: int) -> tuple[list[CachedPartition], list[LiveBroker]]:
    parts = []
    for i in range(partitions):
        replicas = (i % brokers, (i + 1) % brokers, (i + 2) % brokers)
        parts.append(CachedPartition(f"topic-{i // 100}", i % 100, 1, i % brokers, 3, replicas, 5, replicas))
    live = [endpoints_of(b, {"PLAINTEXT": ("127.0.0.1", 9092 + b), "CONTROLLER": ("127.0.0.1", 19092 + b)})
            for b in range(brokers)]
    return parts, live


def _one(parts: list[CachedPartition], live: list[LiveBroker], epoch: int, max_epoch: int | None) -> bytes:
    body = update_metadata_body(VERSION, controller_id=0, controller_epoch=1, broker_epoch=epoch, partitions=parts,
                                live_brokers=live, max_broker_epoch=max_epoch)
    return encode_request(ApiKey.UPDATE_METADATA, VERSION, 0, "0", body)


def _measure(fn: Any) -> tuple[float, int, Any]:
    """(CPU seconds, peak bytes allocated, result): timing without tracemalloc, memory in a second run with it."""
    gc.collect()
    t0 = time.process_time()
    fn()
    cpu = time.process_time() - t0
    gc.collect()
    tracemalloc.start()
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return cpu, peak, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=200)
    ap.add_argument("--sample", type=int, default=3, help="per-broker payloads measured (the rest extrapolated)")
    args = ap.parse_args()
    sample = max(1, min(args.sample, args.brokers))
    parts, live = _inputs(args.partitions, args.brokers)
    print(f"UpdateMetadata v{VERSION} fan-out: {args.partitions} partitions, {args.brokers} brokers")

    cpu_c, peak_c, frame = _measure(lambda: _one(parts, live, -1, 10_000))
    print(f"cached      : 1 body, serialized once: cpu {cpu_c:8.2f} s, bytes allocated (peak) {peak_c / 1e6:9.1f} MB,"
          f" payload {len(frame) / 1e6:.2f} MB shared by {args.brokers} brokers")

    def per_broker() -> list[bytes]:
        return [_one(parts, live, 1000 + b, None) for b in range(sample)]

    cpu_s, peak_s, frames = _measure(per_broker)
    scale = args.brokers / sample
    cpu_p, peak_p = cpu_s * scale, peak_s * scale
    mark = "" if sample == args.brokers else f" (measured for {sample}, extrapolated x{scale:.0f})"
    print(f"per-broker  : {args.brokers} bodies, {args.brokers} serializations: cpu {cpu_p:8.2f} s, bytes allocated "
          f"(all queued) {peak_p / 1e6:9.1f} MB, payload bytes {len(frames[0]) * args.brokers / 1e6:.1f} MB{mark}")
    print(f"ratio per-broker/cached: cpu {cpu_p / cpu_c:6.1f}x, memory {peak_p / peak_c:6.1f}x "
          f"(brokers = {args.brokers}: memory ~ partitions x brokers vs partitions)")


if __name__ == "__main__":
    main()
