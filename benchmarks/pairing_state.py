"""State size and throughput of the control-request pairing operator with 10,000 brokers' worth of requests.

Run: ``.venv/bin/python -m benchmarks.pairing_state [--brokers N] [--rounds R] [--spark] [--batches]``

Workload: one controller sends LeaderAndIsr + UpdateMetadata to every broker, R rounds; the lines of all
brokers interleave in event time (as the merged logs of a big cluster do), and every request completes except
1 in 50 LeaderAndIsr that stays open (never_completed after the timeout). Each micro-batch carries one round.
Measures, per CPU second of this process: events/s through `pairing.step` (the operator's per-key logic), the
JSON state bytes kept across all keys after each round (what the state store holds), and with --spark the
same workload through the log batches' group function (`applyInPandas` over (cluster, bucket) groups, what a batch the
executors processed runs) in one local Spark job (events/s, wall).

With --batches, two whole batches as the log job pairs them (parsed lines -> pairing events -> the group step, one
process, CPU seconds): a 200,000-line backfill of six brokers' state-change logs in one batch (benchmarks.
ingest_end_to_end's log: thousands of requests on each key), and 200,000 lines of a 2,000-broker fleet
(benchmarks.fleet_load: 1,528 groups), on the driver's path (`step_groups`) and through the executors' group
function in one call (no Spark: its Python work alone).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from typing import Any

from pipelines.detection.pairing import Event, PairingParams, PairingState, step

PARAMS = PairingParams(timeout_ms=120_000, max_skew_ms=5_000)
# Spacing of rounds in event time: one LeaderAndIsr/UpdateMetadata pair per broker every 10 s.
ROUND_MS = 10_000


def round_events(brokers: int, r: int, rng: random.Random) -> dict[int, list[Event]]:
    """One round: per broker a LeaderAndIsr (send, handling, finished) and an UpdateMetadata (send, applied)."""
    base = r * ROUND_MS
    out: dict[int, list[Event]] = {}
    for b in range(brokers):
        t = base + rng.randrange(0, ROUND_MS // 2)
        corr = 2 * r
        lai = [Event("send", t, "LeaderAndIsr", None, 1, 10), Event("handling", t + 3, "LeaderAndIsr", corr, None, 10)]
        if rng.random() >= 0.02:
            el = rng.randrange(5, 400)
            lai.append(Event("finished", t + 3 + el, "LeaderAndIsr", corr, None, 10, elapsed_ms=el + 1))
        um = [Event("send", t + 1, "UpdateMetadata", None, 1, 10),
              Event("applied", t + 500, "UpdateMetadata", corr + 1, None, 10)]
        evs = lai + um
        rng.shuffle(evs)  # interleaved / out of order within the batch
        out[b] = evs
    return out


def run_pure(brokers: int, rounds: int) -> None:
    rng = random.Random(7)
    states: dict[int, PairingState] = defaultdict(PairingState)
    events = rows = 0
    cpu = 0.0
    for r in range(rounds):
        batch = round_events(brokers, r, rng)
        watermark = r * ROUND_MS - 10_000
        t0 = time.process_time()
        for b, evs in batch.items():
            rows += len(step(states[b], evs, watermark, PARAMS))
            events += len(evs)
        cpu += time.process_time() - t0
        state_bytes = sum(len(s.to_json()) for s in states.values())
        open_sends = sum(len(s.sends) for s in states.values())
        open_records = sum(len(s.records) for s in states.values())
        print(f"round {r + 1:3d}: state {state_bytes / 1e6:7.2f} MB over {len(states)} keys "
              f"({state_bytes / max(1, len(states)):.0f} B/key), pending sends {open_sends}, open requests "
              f"{open_records}")
    print(f"pairing.step: {events} events, {rows} latency rows, {events / cpu:,.0f} events/s per CPU second")


def run_spark(brokers: int, rounds: int) -> None:
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from datetime import UTC, datetime, timedelta

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from pipelines.detection.config import DetectionConfig
    from pipelines.detection.events import PAIRING_DDL
    from pipelines.detection.pairing_groups import GROUP_OUTPUT, PAIRING_BUCKETS, group_function, pairing_params

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rng = random.Random(7)
        t0 = datetime(2024, 1, 1, tzinfo=UTC)
        data = []
        for r in range(rounds):
            for b, evs in round_events(brokers, r, rng).items():
                for e in evs:
                    data.append(("bench", 1, b, e.kind, t0 + timedelta(milliseconds=e.ts), e.request,
                                 e.correlation_id, e.controller_epoch, e.partitions, e.elapsed_ms, None, e.detail))
        df = spark.createDataFrame(data, PAIRING_DDL).cache()
        n = df.count()
        start = time.perf_counter()
        grouped = df.withColumn("bucket", F.pmod("broker_id", F.lit(PAIRING_BUCKETS))).groupBy("cluster", "bucket")
        out = grouped.applyInPandas(group_function(pairing_params(DetectionConfig()), {}), GROUP_OUTPUT).count()
        wall = time.perf_counter() - start
        print(f"spark pairing (applyInPandas over (cluster, bucket) groups, the group step, local[2]): {n} events -> "
              f"{out} rows in {wall:.1f} s "
              f"= {n / wall:,.0f} events/s")
    finally:
        spark.stop()


def _raw(lines: list[str], clusters: list[str], brokers: list[int | None] | None = None) -> Any:
    import datetime as dt

    import pyarrow as pa

    from schemas.tables import RAW_LOGS

    n, now = len(lines), dt.datetime.now(dt.UTC)
    return pa.table({"cluster": clusters, "broker_id": pa.array(brokers or [None] * n, pa.int32()),
                     "log_kind": ["state-change"] * n, "line": lines, "line_bytes": [len(x) for x in lines],
                     "source": ["bench"] * n, "source_offset": list(range(n)), "ingest_ts": [now] * n,
                     "batch_id": [0] * n, "date": [now.date()] * n}).cast(RAW_LOGS.to_arrow())


def run_batches(lines: int) -> None:
    import tempfile
    from pathlib import Path

    from benchmarks.fleet_load import Fleet, fleet_specs
    from benchmarks.ingest_end_to_end import write_log
    from pipelines.detection.config import DetectionConfig
    from pipelines.detection.events import pairing_events
    from pipelines.detection.pairing_groups import bucket_of, group_function, pairing_params, step_groups
    from pipelines.parsing.engine import run_engine

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "state-change.log"
        write_log(log, lines)
        text = log.read_text().splitlines()
        backfill = _raw(text, ["bench"] * len(text))
    fleet, t = Fleet(fleet_specs(2000)), 1_800_000_000.0
    fleet_lines: list[tuple[float, str, int, str, str]] = []
    while len(fleet_lines) < lines:
        fleet_lines += fleet.lines(t, t + 10)
        t += 10
    fleet_lines = fleet_lines[:lines]
    fleet_raw = _raw([x[4] for x in fleet_lines], [x[1] for x in fleet_lines], [x[2] for x in fleet_lines])
    params = pairing_params(DetectionConfig())
    for name, raw in (("backfill of 6 brokers, one batch", backfill), ("2,000-broker fleet, one batch", fleet_raw)):
        silver = run_engine(raw, "logs").silver
        events = pairing_events(silver["state_change_events"], silver["request_events"])
        t0 = time.process_time()
        rows, groups = step_groups(events, {}, {}, params)
        driver = time.process_time() - t0
        pdf = events.to_pandas()
        pdf["bucket"] = pdf["broker_id"].map(bucket_of)
        t0 = time.process_time()
        group_function(params, {})((0,), pdf[pdf["bucket"] >= 0])
        task = time.process_time() - t0
        print(f"{name}: {raw.num_rows:,} lines -> {events.num_rows:,} events, {len(groups):,} groups, "
              f"{len(rows):,} rows; step_groups {driver:.2f} CPU-s ({events.num_rows / driver:,.0f} events/s), "
              f"the executors' group function {task:.2f} CPU-s ({events.num_rows / task:,.0f} events/s)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--spark", action="store_true", help="also run the Spark operator (slow to start)")
    p.add_argument("--batches", action="store_true", help="only the two whole batches (see above)")
    p.add_argument("--lines", type=int, default=200_000, help="lines of each --batches batch")
    a = p.parse_args()
    if a.batches:
        run_batches(a.lines)
        return
    run_pure(a.brokers, a.rounds)
    if a.spark:
        run_spark(a.brokers, a.rounds)


if __name__ == "__main__":
    main()
