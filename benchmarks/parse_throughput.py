"""Parse throughput: a mixed-version state-change log (2.2-2.5 TRACE, 2.6+ INFO, controller, KRaft, server.log lines),
parsed by planewatch's Spark parser (to a noop sink, and counted), by the pure-Python engine (`planewatch parse`),
and by polars (a layout + field regex parse, the fast single-machine baseline). Prints lines/s.

    .venv/bin/python -m benchmarks.parse_throughput [--lines 2000000] [--skip-python] [--skip-polars]

The file is written to a temporary directory that is removed at the end (about 370 MB for 2 M lines).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Bounded: the generator writes exactly --lines lines, at most this many.
MAX_LINES = 5_000_000
# Spark parse passes over the cached file: the first ones pay the JIT's warm-up of the generated code.
RUNS = 3
CORES = 2  # the machine the targets are for (local[2])

_TEMPLATES = (
    "[{ts}] TRACE [Broker id={b}] Received LeaderAndIsr request PartitionState(controllerEpoch=7, leader=2, "
    "leaderEpoch={le}, isr=2,3, zkVersion=31, replicas=1,2,3, isNew=false) correlation id {c} from controller 1 "
    "epoch 7 for partition orders-{p} (state.change.logger)",
    "[{ts}] TRACE [Broker id={b}] Handling LeaderAndIsr request correlationId {c} from controller 1 epoch 7 starting "
    "the become-follower transition for partition orders-{p} with leader 2 (state.change.logger)",
    "[{ts}] TRACE [Broker id={b}] Stopped fetchers as part of become-follower request from controller 1 epoch 7 with "
    "correlation id {c} for partition orders-{p} with leader 2 (state.change.logger)",
    "[{ts}] TRACE [Broker id={b}] Cached leader info PartitionState(controllerEpoch=7, leader=2, leaderEpoch={le}, "
    "isr=[2, 3], zkVersion=31, replicas=[1, 2, 3], offlineReplicas=[]) for partition orders-{p} in response to "
    "UpdateMetadata request sent by controller 1 epoch 7 with correlation id {c} (state.change.logger)",
    "[{ts}] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker {b} with 120 become-leader and 840 "
    "become-follower partitions (state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Handling LeaderAndIsr request correlationId {c} from controller 1 for 960 partitions "
    "(state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Stopped fetchers as part of LeaderAndIsr request correlationId {c} from controller 1 "
    "epoch 9 as part of the become-leader transition for 120 partitions (state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Finished LeaderAndIsr request in {ms}ms correlationId {c} from controller 1 for 960 "
    "partitions (state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Add 960 partitions and deleted 0 partitions from metadata cache in response to "
    "UpdateMetadata request sent by controller 1 epoch 9 with correlation id {c} (state.change.logger)",
    "[{ts}] INFO [Controller id=1 epoch=9] Sending UpdateMetadata request to brokers HashSet(1, 2, 3) for 963 "
    "partitions (state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Leader orders-{p} starts at leader epoch {le} from offset 88123 with high watermark "
    "88120 ISR [3,1] addingReplicas [] removingReplicas []. Previous leader epoch was 12. (state.change.logger)",
    "[{ts}] INFO [Broker id={b}] Transitioning 2 partition(s) to local leaders. (state.change.logger)",
    "[{ts}] INFO [Log partition=orders-{p}, dir=/var/kafka] Incremented log start offset to {ms} due to leader offset "
    "increment (kafka.log.Log)",
    "[{ts}] INFO [GroupCoordinator 1]: Preparing to rebalance group g{p} (kafka.coordinator.group.GroupCoordinator)",
)


def generate(path: Path, n: int, seed: int = 7) -> None:
    """Write n lines of mixed state-change / server log text."""
    if n > MAX_LINES:
        raise SystemExit(f"--lines is capped at {MAX_LINES}")
    rnd = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            t = _TEMPLATES[rnd.randrange(len(_TEMPLATES))]
            s, ms = divmod(i, 1000)
            ts = f"2021-03-02 {8 + s // 3600 % 12:02d}:{s // 60 % 60:02d}:{s % 60:02d},{ms:03d}"
            f.write(t.format(ts=ts, b=i % 5, c=i // 7, p=i % 50, le=i % 90, ms=i % 20000) + "\n")


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_spark(path: Path, n: int) -> float:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from jobs.ingest.staging import stage_on_executors
    from jobs.run.session import LOCAL_CONF
    from pipelines.parsing.engine import run_engine
    from schemas.routes import RAW_TABLES, ROUTE_TABLES
    from schemas.tables import QUARANTINE

    # the jobs' JVM options (thread stack, JIT of huge generated methods) and driver memory
    spark = (
        SparkSession.builder.master("local[2]").appName("parse-bench").config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2").config(map=dict[str, Any](LOCAL_CONF))
        .config("spark.sql.session.timeZone", "UTC").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm: Any = spark.sparkContext._jvm
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    text = spark.read.text(str(path))
    raw = text.select(
        F.lit("bench").alias("cluster"), F.lit(None).cast("int").alias("broker_id"),
        F.lit("state-change").alias("log_kind"), F.col("value").alias("line"),
        F.length("value").cast("long").alias("line_bytes"), F.lit(str(path)).alias("source"),
        F.monotonically_increasing_id().alias("source_offset"), F.current_timestamp().alias("ingest_ts"),
        F.lit(0).cast("long").alias("batch_id"), F.current_date().alias("date"),
    )
    tables = [RAW_TABLES["logs"].name, *(t.name for t in ROUTE_TABLES["logs"].values()), QUARANTINE.name]
    best = 0.0
    for run in range(RUNS):  # the first runs pay JIT warm-up
        with tempfile.TemporaryDirectory(prefix="parse-bench-") as staged:
            pending = {t: os.path.join(staged, t) for t in tables}
            c0, t0 = _cpu_seconds(jvm_pid), time.perf_counter()
            # the ingest job's executor path: the engine in a task per core (mapInArrow), its rows staged as Parquet
            outcome = stage_on_executors(raw, "logs", lambda t: run_engine(t, family="logs"), pending)
            dt, cpu = time.perf_counter() - t0, _cpu_seconds(jvm_pid) - c0
        # CPU seconds of the JVM: what the parse costs whatever else runs on the (shared) machine
        print(f"spark mapInArrow engine -> staged Parquet, run {run + 1}: {n / dt:,.0f} lines/s ({dt:.1f} s); JVM "
              f"CPU {cpu * 1e6 / n:.1f} us/line = {CORES * n / cpu:,.0f} lines/s on {CORES} idle cores; routes "
              f"{dict(outcome.routes)}")
        best = max(best, n / dt)
    spark.stop()
    return best


# Records per engine call in the in-process run (what one Arrow batch of the file source holds, roughly).
ENGINE_CHUNK = 100_000


def bench_python(path: Path, n: int) -> float:
    """The engine in-process (what the driver path and `planewatch parse` run), one thread of Python."""
    import datetime as dt_

    import pyarrow as pa

    from pipelines.parsing.engine import run_engine
    from schemas.tables import RAW_LOGS

    now = dt_.datetime.now(dt_.UTC)
    t0 = time.perf_counter()
    routes: dict[str, int] = {}
    with path.open(encoding="utf-8") as f:
        lines = f.read().split("\n")[:n]
    for lo in range(0, len(lines), ENGINE_CHUNK):
        chunk = lines[lo:lo + ENGINE_CHUNK]
        m = len(chunk)
        raw = pa.table({"cluster": ["bench"] * m, "broker_id": pa.nulls(m, pa.int32()),
                        "log_kind": ["state-change"] * m,
                        "line": chunk, "line_bytes": [len(x) for x in chunk], "source": [str(path)] * m,
                        "source_offset": list(range(lo, lo + m)), "ingest_ts": [now] * m, "batch_id": [0] * m,
                        "date": [now.date()] * m}).cast(RAW_LOGS.to_arrow())
        for route, count in run_engine(raw, "logs").counts.items():
            routes[route] = routes.get(route, 0) + count
    dt = time.perf_counter() - t0
    print(f"engine in-process (driver path, planewatch parse): {n / dt:,.0f} lines/s ({dt:.1f} s) {routes}")
    return n / dt


def bench_polars(path: Path, n: int) -> float:
    import polars as pl

    layout = r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] ([A-Z]+) (?:\[([^\]]*)\] )?(.*) \(([^()]*)\)$"
    t0 = time.perf_counter()
    df = (
        pl.scan_csv(str(path), has_header=False, separator="\x1f", quote_char=None, new_columns=["line"])
        .with_columns(pl.col("line").str.extract_groups(layout).alias("g"))
        .unnest("g")
        .with_columns(
            pl.col("1").str.strptime(pl.Datetime, "%Y-%m-%d %H:%M:%S,%3f", strict=False).alias("ts"),
            pl.col("4").str.extract(r"[Cc]orrelation ?[Ii]d (\d+)").cast(pl.Int64, strict=False).alias("corr"),
            pl.col("4").str.extract(r"from controller (\d+)").cast(pl.Int32, strict=False).alias("cid"),
            pl.col("4").str.extract(r"for (\d+) partitions").cast(pl.Int32, strict=False).alias("parts"),
            pl.col("4").str.extract(r"in (\d+)ms").cast(pl.Int64, strict=False).alias("elapsed"),
            pl.col("4").str.extract(r"partition (\S+)-\d+").alias("topic"),
        )
        .select(pl.len())
        .collect()
    )
    dt = time.perf_counter() - t0
    print(f"polars (layout + 5 field regexes): {n / dt:,.0f} lines/s ({dt:.1f} s) rows={df.item()}")
    return n / dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--skip-python", action="store_true")
    ap.add_argument("--skip-polars", action="store_true")
    ap.add_argument("--skip-spark", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="pw-parse-bench-") as tmp:
        path = Path(tmp) / "state-change.log"
        t0 = time.perf_counter()
        generate(path, args.lines)
        size_mb = path.stat().st_size / 1e6
        print(f"generated {args.lines:,} lines ({size_mb:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        if not args.skip_polars:
            bench_polars(path, args.lines)
        if not args.skip_python:
            bench_python(path, args.lines)
        if not args.skip_spark:
            bench_spark(path, args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
