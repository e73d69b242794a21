"""End-to-end ingestion throughput and one-line latency (issue 5).

    .venv/bin/python -m benchmarks.ingest_end_to_end [--lines 2000000] [--metric-lines 500000] [--skip-latency]
        [--skip-baselines] [--driver-path] [--warm-runs 2]

1. A mixed-version state-change log (2.2-2.5 TRACE per-partition lines, 2.6+ INFO summaries with correlation ids,
   Finished lines, controller Sending lines) -> the ingest job (planewatch_files source, bronze raw_logs + silver
   state_change_events + quarantine + dq_results, exactly-once delta-rs sink, quality rules on) with availableNow:
   lines/s of the session's first run (fresh: JIT and Python workers cold) and of later runs into new tables (warm).
2. The same file -> the same silver table with the simplest thing a user would write: a plain Python `re` loop +
   `write_deltalake`; and with polars (`str.extract_groups`, `write_delta`).
3. Prometheus metric samples -> raw_metrics + metric_samples: lines/s.
4. Latency of one line appended to a growing file until its row is readable in Delta (trigger 1 second).
Spark start-up is excluded from the throughput numbers (it is printed separately).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.exit import exit_with

LAYOUT = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \(([^)]+)\)$")
CORR = re.compile(r"correlation ?[iI]d (\d+)")
CTRL = re.compile(r"controller (\d+)")
EPOCH = re.compile(r"epoch (\d+)")
BROKER = re.compile(r"\[Broker id=(\d+)\]")
PARTS = re.compile(r"for (\d+) partitions")
ELAPSED = re.compile(r"in (\d+)ms")


def _line(i: int, ts: dt.datetime, rnd: random.Random) -> str:
    t = ts.strftime("%Y-%m-%d %H:%M:%S,") + f"{ts.microsecond // 1000:03d}"
    b = rnd.randint(1, 6)
    kind = i % 6
    if kind == 0:
        msg = (
            f"TRACE [Broker id={b}] Received LeaderAndIsr request PartitionState(controllerEpoch=9, leader=1, "
            f"leaderEpoch=3, isr=1,2,3, zkVersion=3, replicas=1,2,3, isNew=false) correlation id {i} from "
            f"controller 1 epoch 9 for partition topic-{i % 50}-{i % 12}"
        )
    elif kind == 1:
        msg = f"INFO [Broker id={b}] Handling LeaderAndIsr request correlationId {i} from controller 1 for 12 partitions"  # noqa: E501
    elif kind == 2:
        msg = (
            f"INFO [Broker id={b}] Finished LeaderAndIsr request in {rnd.randint(1, 900)}ms correlationId {i - 1} "
            "from controller 1 for 12 partitions"
        )
    elif kind == 3:
        msg = f"INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker {b} with 12 become-leader and 0 become-follower partitions"  # noqa: E501
    elif kind == 4:
        msg = (
            f"INFO [Broker id={b}] Add 12 partitions and deleted 0 partitions from metadata cache in response to "
            f"UpdateMetadata request sent by controller 1 epoch 9 with correlation id {i}"
        )
    else:
        msg = f"TRACE [Controller id=1 epoch=9] Sending become-leader LeaderAndIsr request PartitionState(controllerEpoch=9, leader=1, leaderEpoch=3) to broker {b} for partition topic-{i % 50}-{i % 12}"  # noqa: E501
    return f"[{t}] {msg} (state.change.logger)"


def write_log(path: Path, lines: int) -> int:
    """Write the mixed state-change log; returns its size in bytes."""
    rnd = random.Random(7)
    t0 = dt.datetime(2024, 5, 10, 9, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        chunk: list[str] = []
        for i in range(lines):
            chunk.append(_line(i, t0 + dt.timedelta(milliseconds=i), rnd))
            if len(chunk) == 10_000:
                fh.write("\n".join(chunk) + "\n")
                chunk.clear()
        if chunk:
            fh.write("\n".join(chunk) + "\n")
    return path.stat().st_size


def write_metrics(root: Path, lines: int) -> None:
    names = [
        "kafka_network_requestchannel_requestqueuesize",
        "kafka_network_requestchannel_controlplanerequestqueuesize",
        "kafka_network_socketserver_networkprocessoravgidlepercent",
        'kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total{broker="1"}',
    ]
    per_file = 10_000
    for f in range(max(1, lines // per_file)):
        d = root / "bench" / f"broker-{f % 3 + 1}" / "metrics"
        d.mkdir(parents=True, exist_ok=True)
        # every sample its own (series, timestamp): a later sample of a series at a timestamp the batch already has
        # is a duplicate the engine counts as unused, which would leave silver nearly empty
        ts = 1715331600000 + f * per_file
        body = [f"{names[i % len(names)]} {i % 17}.0 {ts + i // len(names)}" for i in range(per_file)]
        (d / f"scrape-{ts}.prom").write_text("\n".join(body) + "\n")


def python_re_loop(log: Path, table: str) -> float:
    """A plain Python regex loop into the silver table with delta-rs; returns seconds."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from schemas.tables import STATE_CHANGE_EVENTS

    t0 = time.perf_counter()
    cols: dict[str, list[Any]] = {c: [] for c in STATE_CHANGE_EVENTS.names}

    def g(rx: re.Pattern[str], s: str) -> int | None:
        m = rx.search(s)
        return int(m.group(1)) if m else None

    now = dt.datetime.now(dt.UTC)
    with log.open(encoding="utf-8", errors="replace") as fh:
        for off, line in enumerate(fh):
            m = LAYOUT.match(line.rstrip("\n"))
            if not m:
                continue
            ts = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC)
            msg = m.group(3)
            row = dict.fromkeys(cols)
            row.update(
                cluster="bench", broker_id=g(BROKER, msg), ts=ts, level=m.group(2), logger=m.group(4),
                event="LeaderAndIsr" if "LeaderAndIsr" in msg else "other", correlation_id=g(CORR, msg),
                controller_id=g(CTRL, msg), controller_epoch=g(EPOCH, msg), partitions=g(PARTS, msg),
                elapsed_ms=g(ELAPSED, msg), message=msg, source=str(log), source_offset=off, ingest_ts=now,
                date=ts.date(),
            )  # fmt: skip
            for k, v in row.items():
                cols[k].append(v)
            if len(cols["cluster"]) >= 200_000:
                write_deltalake(table, pa.Table.from_pydict(cols, STATE_CHANGE_EVENTS.to_arrow()), mode="append",
                                partition_by=["cluster", "date"])  # fmt: skip
                cols = {c: [] for c in STATE_CHANGE_EVENTS.names}
    if cols["cluster"]:
        write_deltalake(table, pa.Table.from_pydict(cols, STATE_CHANGE_EVENTS.to_arrow()), mode="append",
                        partition_by=["cluster", "date"])  # fmt: skip
    return time.perf_counter() - t0


def polars_path(log: Path, table: str) -> float:
    """polars: read lines, extract with vectorised regexes, write Delta; returns seconds."""
    import polars as pl

    t0 = time.perf_counter()
    df = pl.read_csv(log, has_header=False, separator="\x01", quote_char=None, new_columns=["line"])
    v = pl.col("line")
    out = df.with_columns(v.str.extract_groups(LAYOUT.pattern).alias("g")).unnest("g")
    out = out.rename({"1": "ts_s", "2": "level", "3": "message", "4": "logger"}).select(
        pl.lit("bench").alias("cluster"),
        pl.col("message").str.extract(BROKER.pattern, 1).cast(pl.Int32).alias("broker_id"),
        pl.col("ts_s").str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%d %H:%M:%S,%3f", strict=False).alias("ts"),
        "level",
        "logger",
        pl.col("message").str.extract(CORR.pattern, 1).cast(pl.Int64).alias("correlation_id"),
        pl.col("message").str.extract(CTRL.pattern, 1).cast(pl.Int32).alias("controller_id"),
        pl.col("message").str.extract(EPOCH.pattern, 1).cast(pl.Int32).alias("controller_epoch"),
        pl.col("message").str.extract(PARTS.pattern, 1).cast(pl.Int32).alias("partitions"),
        pl.col("message").str.extract(ELAPSED.pattern, 1).cast(pl.Int64).alias("elapsed_ms"),
        "message",
    )
    out = out.with_columns(pl.col("ts").dt.date().alias("date"))
    out.write_delta(table, mode="append", delta_write_options={"partition_by": ["cluster", "date"]})
    return time.perf_counter() - t0


def rate(lines: int, wall: float) -> str:
    """`lines` in `wall` seconds as lines/s, with the machine's load then (a shared machine: compare runs of the same
    moment). CPU seconds of the process tree are not given: workers that Spark ends take theirs with them."""
    return f"{lines / wall:,.0f} lines/s (load {os.getloadavg()[0]:.1f})"


def _count(path: str) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(path).to_pyarrow_table(columns=["source_offset"]).num_rows)


def latency(spark: Any, tmp: Path, samples: int = 5) -> list[float]:
    """Append one line to a growing file; seconds until its row is readable in raw_logs (trigger 1 s)."""
    from jobs.run.runner import run_pipeline
    from jobs.run.settings import parse_settings

    inp = tmp / "lat-input" / "broker-1"
    inp.mkdir(parents=True)
    log = inp / "state-change.log"
    log.write_text(_line(0, dt.datetime(2024, 5, 10), random.Random(1)) + "\n")
    lake = tmp / "lat-lake"
    s = parse_settings(
        {"lake": str(lake), "checkpoints": str(tmp / "lat-ck"), "trigger": {"interval": "1 second"},
         "sources": {"files": {"path": str(tmp / "lat-input")}}, "quality": {"enabled": True, "sample_limit": 100}},
        "bench",
    )  # fmt: skip
    from jobs.ingest.queries import start_ingest_queries

    queries = start_ingest_queries(spark, s, "logs")
    del run_pipeline
    out: list[float] = []
    try:
        raw = str(lake / "raw_logs")
        deadline = time.monotonic() + 120
        while _count(raw) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        for i in range(samples):
            n = _count(raw)
            time.sleep(1.3)  # land at a random phase of the trigger
            t0 = time.perf_counter()
            with log.open("a") as fh:
                fh.write(_line(i + 1, dt.datetime(2024, 5, 10, 9), random.Random(i)) + "\n")
            while _count(raw) <= n:
                if time.perf_counter() - t0 > 60:
                    raise RuntimeError("latency sample did not arrive in 60 s")
                time.sleep(0.05)
            out.append(time.perf_counter() - t0)
    finally:
        for q in queries:
            q.stop()
    return out


def _ingest_logs(spark: Any, tmp: Path, lake: str, batch_bytes: int, driver_max_rows: int | None
                 ) -> tuple[float, int, int]:
    """The ingest job over tmp/input into tmp/<lake> (quality on): (seconds, raw rows, silver rows)."""
    from jobs.run.runner import run_pipeline
    from jobs.run.settings import parse_settings

    raw: dict[str, Any] = {
        "lake": str(tmp / lake), "checkpoints": str(tmp / f"{lake}-ck"), "trigger": {"once": True},
        "sources": {"files": {"path": str(tmp / "input"), "max_bytes_per_batch": batch_bytes}},
        "quality": {"enabled": True, "sample_limit": 5000},
    }
    if driver_max_rows is not None:
        raw["sink"] = {"driver_batch_max_rows": driver_max_rows}
    t = time.perf_counter()
    run_pipeline(spark, parse_settings(raw, "bench"), families=("logs",), detection=False)
    el = time.perf_counter() - t
    return el, _count(str(tmp / lake / "raw_logs")), _count(str(tmp / lake / "state_change_events"))


# Micro-batch size of the --driver-path run: ~15,000 of the benchmark's ~200-byte lines, under the default
# sink.driver_batch_max_rows (20,000), so every batch takes the driver path.
DRIVER_BATCH_BYTES = 3 * 1024 * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--metric-lines", type=int, default=500_000)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-baselines", action="store_true")
    parser.add_argument("--warm-runs", type=int, default=2, help="ingest runs after the first (fresh) one")
    parser.add_argument("--driver-path", action="store_true",
                        help="also ingest the same log in small micro-batches (3 MiB, under sink.driver_batch_max_rows)"
                             " that the driver parses and commits (jobs.ingest_driver)")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from jobs.run.runner import run_pipeline
    from jobs.run.session import build_session
    from jobs.run.settings import parse_settings

    tmp = Path(tempfile.mkdtemp(prefix="pw-bench-"))
    log = tmp / "input" / "bench" / "broker-1" / "state-change.log"
    t = time.perf_counter()
    size = write_log(log, args.lines)
    print(f"input: {args.lines:,} lines, {size / 1e6:.0f} MB state-change log in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    base = parse_settings({"spark": {"master": "local[2]"}}, "bench")
    spark = build_session(base, "planewatch-bench")
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark session start: {time.perf_counter() - t:.1f} s (excluded below)")
    try:
        for run in range(1 + args.warm_runs):
            # the first run pays the session's first jobs (JIT, Python workers); later ones are warm
            label = "fresh" if run == 0 else f"warm {run}"
            el, n_raw, n_silver = _ingest_logs(spark, tmp, f"lake{run}", 128 * 1024 * 1024, None)
            print(
                f"spark ingest {label} (bronze+silver+quarantine+dq, quality on): {el:.1f} s, "
                f"{rate(args.lines, el)} (raw {n_raw:,}, silver {n_silver:,})"
            )
        if args.driver_path:
            el, _, n_silver = _ingest_logs(spark, tmp, "dlake", DRIVER_BATCH_BYTES, 20_000)
            print(f"driver path (3 MiB micro-batches, parsed and committed by the driver): {el:.1f} s, "
                  f"{args.lines / el:,.0f} lines/s (silver {n_silver:,})")
        if not args.skip_baselines:
            t_re = python_re_loop(log, str(tmp / "re_table"))
            print(f"python re loop -> delta-rs (silver only): {t_re:.1f} s, {rate(args.lines, t_re)}")
            t_pl = polars_path(log, str(tmp / "polars_table"))
            print(f"polars -> write_delta (silver only): {t_pl:.1f} s, {rate(args.lines, t_pl)}")
        if args.metric_lines:
            mroot = tmp / "metrics-input"
            write_metrics(mroot, args.metric_lines)
            sm = parse_settings(
                {"lake": str(tmp / "mlake"), "checkpoints": str(tmp / "mck"), "trigger": {"once": True},
                 "sources": {"files": {"path": str(mroot), "max_bytes_per_batch": 128 * 1024 * 1024}}},
                "bench",
            )  # fmt: skip
            t = time.perf_counter()
            run_pipeline(spark, sm, families=("metrics",), detection=False)
            el = time.perf_counter() - t
            n = _count(str(tmp / "mlake" / "metric_samples"))
            print(f"spark metrics ingest: {el:.1f} s, {rate(args.metric_lines, el)} (metric_samples {n:,})")
        if not args.skip_latency:
            lat = latency(spark, tmp)
            print(
                f"one-line latency (append -> readable in raw_logs, trigger 1 s): median {statistics.median(lat):.2f} s"
                f", min {min(lat):.2f}, max {max(lat):.2f} over {len(lat)}"
            )
    finally:
        spark.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    exit_with(main())
