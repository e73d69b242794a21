"""The lake on a local directory and on an object store side by side: the same ingest, the default sink.

    .venv/bin/python -m benchmarks.lake_stores [--lines 200000] [--trickle-batches 8] [--rounds 2]

The ingest job (planewatch_files, bronze + silver + quarantine + dq_results, pairing and rules on, quality off)
over the same state-change log, once with `lake:` a directory (what a single machine or NFS uses) and once with
`lake: s3://...` on s3proxy (planewatch.objectstore, the S3 server the tests run, serving a directory of this same
machine): bulk (the whole log in one micro-batch, the executors' path) and trickle (small micro-batches, the
per-batch cost a quiet fleet's detection delay pays). One SparkSession, warmed up first; the two stores alternate,
`--rounds` times. Wall-clock on whatever else the machine runs (s3proxy's JVM shares the cores): compare the two
sides of a line, not machines. An object store across a network adds its round trips to the object store's lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.ingest_end_to_end import write_log

# Bytes per trickle micro-batch: ~2,500 of the log's ~200-byte lines, a busy minute of one broker's state-change log.
TRICKLE_BATCH_BYTES = 512 * 1024


def _ingest(spark: Any, lake: str, ck: Path, inp: Path, batch_bytes: int, sink: dict[str, Any]
            ) -> tuple[float, int, int]:
    """One --once ingest run into `lake`: (seconds, raw rows, micro-batches)."""
    from deltalake import DeltaTable

    from jobs.run.runner import run_pipeline
    from jobs.run.settings import parse_settings

    settings = parse_settings(
        {"lake": lake, "checkpoints": str(ck), "trigger": {"once": True}, "quality": {"enabled": False},
         "sources": {"files": {"path": str(inp), "max_bytes_per_batch": batch_bytes}}, "sink": sink},
        "bench",
    )  # fmt: skip
    t = time.perf_counter()
    run_pipeline(spark, settings, families=("logs",))
    seconds = time.perf_counter() - t
    raw = DeltaTable(f"{lake}/raw_logs")  # created empty at version 0, then one commit a batch
    rows = sum(int(n) for n in raw.get_add_actions(flatten=True).column("num_records").to_pylist())
    return seconds, rows, raw.version()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000, help="lines of the bulk run's log")
    parser.add_argument("--trickle-batches", type=int, default=8, help="small micro-batches of the trickle runs")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side (alternating)")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from jobs.run.session import build_session
    from jobs.run.settings import parse_settings
    from planewatch.objectstore import ObjectStore

    tmp = Path(tempfile.mkdtemp(prefix="pw-lake-stores-"))
    bulk_in, trickle_in = tmp / "bulk" / "bench" / "broker-1", tmp / "trickle" / "bench" / "broker-1"
    write_log(bulk_in / "state-change.log", args.lines)
    write_log(trickle_in / "state-change.log", args.trickle_batches * TRICKLE_BATCH_BYTES // 200)
    with ObjectStore(tmp / "s3") as store:
        os.environ.update(store.env())
        spark = build_session(parse_settings({}, "bench"), "lake-stores")
        stores = {"directory": str(tmp / "lakes" / "{run}"), "object store (s3proxy)": store.uri("{run}")}
        runs = 0

        def once(where: str, inp: Path, batch_bytes: int, sink: dict[str, Any]) -> tuple[float, int, int]:
            nonlocal runs
            runs += 1
            lake = stores[where].format(run=f"r{runs}")
            return _ingest(spark, lake, tmp / "ck" / f"r{runs}", inp.parent.parent, batch_bytes, sink)

        once("directory", trickle_in, TRICKLE_BATCH_BYTES, {})  # warm-up: JIT, Python workers, imports
        once("object store (s3proxy)", trickle_in, TRICKLE_BATCH_BYTES, {})
        cases = [("bulk, one batch (executors)", bulk_in, 1 << 40, {"driver_batch_max_rows": 0}),
                 ("trickle, defaults (driver path)", trickle_in, TRICKLE_BATCH_BYTES, {}),
                 ("trickle, executors", trickle_in, TRICKLE_BATCH_BYTES, {"driver_batch_max_rows": 0})]
        print(f"ingest with detection, {args.lines:,} lines bulk; trickle {args.trickle_batches} x "
              f"{TRICKLE_BATCH_BYTES // 1024} KiB; median of {args.rounds}:")
        for label, inp, batch_bytes, sink in cases:
            print(f" {label}:")
            got: dict[str, list[tuple[float, int, int]]] = {w: [] for w in stores}
            for _ in range(args.rounds):
                for where in stores:
                    got[where].append(once(where, inp, batch_bytes, sink))
            for where, results in got.items():
                seconds = statistics.median(r[0] for r in results)
                rows, batches = results[0][1], results[0][2]
                print(f"  {where:<24} {seconds:7.1f} s  {rows / seconds:>9,.0f} lines/s  {batches:>3} batches  "
                      f"{seconds / max(batches, 1):5.2f} s/batch")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
