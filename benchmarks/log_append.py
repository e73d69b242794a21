"""Throughput of the durable partition log (broker/log): appends with and without fsync, reads.

Run: ``.venv/bin/python -m benchmarks.log_append [--seconds S] [--dir DIR]``

Workload: record batches of 100 records x 100-byte values (~11 KB per batch, as a producer with linger
builds them), appended with ``append_as_leader`` to one partition with Kafka's default segment settings
except a 64 MiB segment size. Five measurements, each bounded in wall time (default 2 s) and batch count:

* append, no fsync (acks=0/1 path)
* append, fdatasync per append (acks=all path, ``durable=True``), one producer thread
* append, fdatasync per append, 4 producer threads (group commit: one sync covers appends made before it)
* read, whole-log sequential fetches of 1 MiB (consumer path), from the page cache
* append, no fsync, zstd-compressed batches (the leader decompresses each batch to check its records)

Numbers: batches/s, records/s and MB/s. The log dir defaults to a temp dir under ``/tmp`` (same disk as the
broker's ``log.dirs`` in the README setup).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from broker.log import LogConfig, TopicPartition, build_batch
from broker.log.log import Log
from broker.log4j import Log4j

#: Wall-clock budget per measurement (seconds); keeps the run short on a shared 2-core machine.
DEFAULT_SECONDS = 2.0
#: Hard cap on appends per measurement, whatever the budget (bounds disk use: 20,000 x 11 KB = 220 MB).
MAX_BATCHES = 20_000
RECORDS_PER_BATCH = 100
VALUE_BYTES = 100
FETCH_BYTES = 1024 * 1024
PRODUCER_THREADS = 4


def _batch(compression: int = 0) -> bytes:
    records = [(b"key-%06d" % i, bytes([97 + i % 26]) * VALUE_BYTES) for i in range(RECORDS_PER_BATCH)]
    ts = int(time.time() * 1000)
    if compression == 0:
        return build_batch(records, base_timestamp=ts)
    from broker.protocol.records import build_batch as wire_build_batch  # has the codecs

    return wire_build_batch(records, base_timestamp=ts, compression=compression)


def _report(name: str, batches: int, nbytes: int, seconds: float) -> None:
    print(f"{name:<44} {batches / seconds:>10,.0f} batches/s {batches * RECORDS_PER_BATCH / seconds:>12,.0f} "
          f"records/s {nbytes / seconds / 1e6:>8.1f} MB/s  ({batches} batches in {seconds:.2f} s)")


def _append_loop(log: Log, payload: bytes, durable: bool, seconds: float, cap: int,
                 counter: list[int]) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline and counter[0] < cap:
        log.append_as_leader(payload, 1, durable=durable)
        counter[0] += 1


def _measure_append(root: Path, name: str, durable: bool, threads: int, seconds: float,
                    compression: int = 0) -> Log:
    log = Log(root / name, TopicPartition(name, 0), LogConfig(segment_bytes=64 * 1024 * 1024), log4j=Log4j())
    payload = _batch(compression)
    counters = [[0] for _ in range(threads)]
    workers = [threading.Thread(target=_append_loop, args=(log, payload, durable, seconds, MAX_BATCHES // threads, c))
               for c in counters]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    total = sum(c[0] for c in counters)
    label = f"append {'fdatasync each' if durable else 'no fsync'}, {threads} thread{'s' if threads > 1 else ''}"
    if compression:
        label += f", {('', 'gzip', 'snappy', 'lz4', 'zstd')[compression]} ({len(payload)} B)"
    _report(label, total, total * len(payload), elapsed)
    return log


def _measure_read(log: Log, seconds: float) -> None:
    start = time.perf_counter()
    deadline = start + seconds
    batches = nbytes = 0
    offset = log.log_start_offset
    end = log.log_end_offset
    while time.perf_counter() < deadline:
        data = log.read(offset, FETCH_BYTES).records
        nbytes += len(data)
        batches += len(data) // len(_PAYLOAD_SIZE_PROBE)
        offset += (len(data) // len(_PAYLOAD_SIZE_PROBE)) * RECORDS_PER_BATCH
        if offset >= end:
            offset = log.log_start_offset
    _report(f"read {FETCH_BYTES // 1024} KiB fetches (page cache)", batches, nbytes, time.perf_counter() - start)


_PAYLOAD_SIZE_PROBE = _batch()


def main(argv: list[str] | None = None) -> int:
    """Run the four measurements and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, help="budget per measurement")
    parser.add_argument("--dir", type=Path, default=None, help="log dir (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-log-") as tmp:
        root = Path(tmp)
        print(f"batch = {RECORDS_PER_BATCH} records x {VALUE_BYTES} B values, {len(_PAYLOAD_SIZE_PROBE)} bytes; "
              f"log dir {root}")
        runs: list[tuple[str, bool, int]] = [("nofsync", False, 1), ("fsync1", True, 1),
                                             ("fsync4", True, PRODUCER_THREADS)]
        logs: list[Log] = []
        for name, durable, threads in runs:
            logs.append(_measure_append(root, name, durable, threads, args.seconds))
        _measure_read(logs[0], args.seconds)
        logs.append(_measure_append(root, "zstd", False, 1, args.seconds, compression=4))
        for log in logs:
            log.close(flush=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
