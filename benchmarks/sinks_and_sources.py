"""The two Delta sinks and the two Kafka readers side by side on the same input (the numbers behind the defaults).

    .venv/bin/python -m benchmarks.sinks_and_sources [--lines 200000] [--trickle-batches 8] [--kafka-records 100000]
        [--startup-runs 2]

1. Session start-up (a fresh JVM each, `jobs.run.session.build_session` + a first job) with and without the
   delta-spark / spark-sql-kafka jars (`PLANEWATCH_JVM_DIR` pointed at an empty directory hides them).
2. Sinks: the ingest job (planewatch_files, bronze + silver + quarantine + dq_results, quality off so only the
   writers differ) over the same state-change log, once per `sink.mode`:
   bulk: the whole log in one micro-batch; trickle: small micro-batches (seconds per batch, what a quiet cluster's
   detection delay pays), delta-rs on its defaults (such batches take its driver path) and on the executors.
   Then the bulk raw_logs table read back as detection reads silver (one partition), natively and jar-free.
3. Kafka readers: the same records in a topic of the reference broker (2 partitions, on 127.0.0.1) -> bronze and
   silver through `sources.kafka.reader` python (planewatch_kafka) and spark (format kafka), sink delta-rs.
One SparkSession (with the jars) for 2 and 3, warmed up by a small run first; runs alternate between the two
sides. Numbers are wall-clock on whatever else the machine runs: compare the two sides of a line, not machines.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.broker_support import broker_process
from benchmarks.exit import exit_with
from benchmarks.ingest_end_to_end import write_log

# Bytes of the benchmark's log per trickle micro-batch: ~2,500 of its ~200-byte lines, a busy minute of one
# broker's state-change log; under delta-rs's driver_batch_max_rows, so delta-rs's defaults take the driver path.
TRICKLE_BATCH_BYTES = 512 * 1024
# Records per Kafka micro-batch (both readers): the whole topic in a few batches.
KAFKA_BATCH_RECORDS = 50_000
KAFKA_PARTITIONS = 2
READ_REPEATS = 5
STARTUP_SNIPPET = """
import time, sys
t = time.perf_counter()
from jobs.run.session import build_session
from jobs.run.settings import parse_settings
spark = build_session(parse_settings({}, "bench"), "startup")
spark.range(10).count()
print(f"{time.perf_counter() - t:.2f}")
spark.stop()
"""


def startup_seconds(with_jars: bool) -> float:
    """Seconds to a session's first finished job in a fresh interpreter and JVM."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    if not with_jars:
        env["PLANEWATCH_JVM_DIR"] = tempfile.mkdtemp(prefix="pw-nojars-")
    out = subprocess.run([sys.executable, "-c", STARTUP_SNIPPET], env=env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    return float(out.stdout.strip().splitlines()[-1])


def _ingest(spark: Any, tmp: Path, name: str, inp: Path, sink: dict[str, Any], batch_bytes: int,
            kafka: dict[str, Any] | None = None) -> tuple[float, int, int]:
    """One --once ingest run of the logs into tmp/<name>: (seconds, raw rows, micro-batches)."""
    from jobs.run.runner import run_pipeline
    from jobs.run.settings import parse_settings

    sources: dict[str, Any] = {"files": {"path": str(inp), "max_bytes_per_batch": batch_bytes}}
    if kafka is not None:
        sources = {"files": {"enabled": False}, "kafka": kafka}
    settings = parse_settings(
        {"lake": str(tmp / name / "lake"), "checkpoints": str(tmp / name / "ck"), "trigger": {"once": True},
         "sources": sources, "quality": {"enabled": False}, "sink": sink},
        "bench",
    )  # fmt: skip
    t = time.perf_counter()
    run_pipeline(spark, settings, families=("logs",), detection=False)
    seconds = time.perf_counter() - t
    from deltalake import DeltaTable

    raw = DeltaTable(str(tmp / name / "lake" / "raw_logs")).to_pyarrow_table(columns=["batch_id"])
    return seconds, raw.num_rows, len(set(raw.column("batch_id").to_pylist()))


def _line(label: str, seconds: float, rows: int, batches: int) -> str:
    return (f"  {label:<44} {seconds:7.1f} s  {rows / seconds:>9,.0f} lines/s  {batches:>3} batches  "
            f"{seconds / max(batches, 1):5.2f} s/batch")


def print_reads(spark: Any, table: Path) -> None:
    """read_delta of one partition of `table` (what detection does per batch), natively and through delta-rs's file
    list: median seconds of READ_REPEATS, each a count."""
    import statistics

    from lake.spark_read import read_delta

    part = [[("cluster", "=", "bench"), ("date", "=", time.strftime("%Y-%m-%d", time.gmtime()))]]
    print(f"reads, one partition of {table.name} ({READ_REPEATS} counts, median):")
    for native in (True, False):
        times, rows = [], 0
        for _ in range(READ_REPEATS):
            t = time.perf_counter()
            rows = read_delta(spark, str(table), partitions_in=part, native=native).count()
            times.append(time.perf_counter() - t)
        label = "delta-spark (format delta)" if native else "delta-rs file list + Spark parquet"
        print(f"  {label:<44} {statistics.median(times):7.2f} s  ({rows:,} rows)")


def _produce(bootstrap: str, topic: str, log: Path) -> int:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=KAFKA_PARTITIONS, replication_factor=1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "log_level": 0})
    n = 0
    with log.open("rb") as fh:
        for line in fh:
            while True:
                try:
                    p.produce(topic, line.rstrip(b"\n"), key=b"broker-1")
                    break
                except BufferError:
                    p.poll(0.1)
            n += 1
    if p.flush(120) != 0:
        raise RuntimeError("the reference broker did not take every record")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000, help="lines of the sink runs' log")
    parser.add_argument("--trickle-batches", type=int, default=8, help="small micro-batches in the trickle runs")
    parser.add_argument("--kafka-records", type=int, default=100_000)
    parser.add_argument("--startup-runs", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from jobs.run.jars import spark_jars
    from jobs.run.session import build_session
    from jobs.run.settings import parse_settings

    if spark_jars() is None:
        print("the jars are not fetched: python -m planewatch.kafka.artifacts fetch spark", file=sys.stderr)
        return 2
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores; other processes share them)")
    print("session start-up to the first job (fresh JVM):")
    for _ in range(args.startup_runs):
        without, with_ = startup_seconds(False), startup_seconds(True)
        print(f"  without jars {without:5.1f} s   with delta-spark + spark-sql-kafka {with_:5.1f} s")

    tmp = Path(tempfile.mkdtemp(prefix="pw-bench-sinks-"))
    bulk = tmp / "bulk" / "bench" / "broker-1" / "state-change.log"
    trickle = tmp / "trickle" / "bench" / "broker-1" / "state-change.log"
    write_log(bulk, args.lines)
    trickle_lines = args.trickle_batches * TRICKLE_BATCH_BYTES // 205
    write_log(trickle, trickle_lines)
    spark = build_session(parse_settings({"sink": {"mode": "delta-spark"}}, "bench"), "planewatch-bench-sinks")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        warm = tmp / "warm" / "bench" / "broker-1" / "state-change.log"
        write_log(warm, 2_000)
        for mode in ("delta-rs", "delta-spark"):  # JIT, Python workers, Delta's classes
            _ingest(spark, tmp, f"warm-{mode}", warm.parents[2], {"mode": mode, "driver_batch_max_rows": 0}, 1 << 30)
        print(f"sinks, {args.lines:,}-line state-change log (bronze + silver + quarantine + dq_results, quality off):")
        for mode in ("delta-rs", "delta-spark"):
            el, rows, batches = _ingest(spark, tmp, f"bulk-{mode}", bulk.parents[2],
                                        {"mode": mode, "driver_batch_max_rows": 0}, 1 << 30)
            print(_line(f"bulk, {mode}", el, rows, batches))
        print_reads(spark, tmp / "bulk-delta-spark" / "lake" / "raw_logs")
        print(f"sinks, {trickle_lines:,} lines in {TRICKLE_BATCH_BYTES // 1024} KiB micro-batches:")
        for label, sink in (("delta-rs (defaults: driver path)", {"mode": "delta-rs"}),
                            ("delta-rs (executors)", {"mode": "delta-rs", "driver_batch_max_rows": 0}),
                            ("delta-spark", {"mode": "delta-spark"})):
            el, rows, batches = _ingest(spark, tmp, f"trickle-{label.split()[0]}-{len(sink)}", trickle.parents[2],
                                        sink, TRICKLE_BATCH_BYTES)
            print(_line(label, el, rows, batches))

        kafka_log = tmp / "kafka" / "state-change.log"
        write_log(kafka_log, args.kafka_records)
        with broker_process({"listeners": "PLAINTEXT://127.0.0.1:0"}) as (ports, _pid):
            bootstrap = f"127.0.0.1:{ports['PLAINTEXT']}"
            t = time.perf_counter()
            n = _produce(bootstrap, "kafka-logs", kafka_log)
            print(f"kafka readers, {n:,} records in {KAFKA_PARTITIONS} partitions of the reference broker "
                  f"(produced in {time.perf_counter() - t:.1f} s), sink delta-rs:")
            for reader in ("python", "spark", "python", "spark"):  # alternating: neither side gets the warm slot
                kafka = {"enabled": True, "bootstrap_servers": bootstrap, "logs_topics": ["kafka-logs"],
                         "max_records_per_batch": KAFKA_BATCH_RECORDS, "reader": reader}
                el, rows, batches = _ingest(spark, tmp, f"kafka-{reader}-{time.monotonic_ns()}", tmp, {}, 1, kafka)
                name = "planewatch_kafka (python)" if reader == "python" else "format kafka (spark)"
                print(_line(name, el, rows, batches))
    finally:
        spark.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    exit_with(main())
