"""State size and throughput of the control-request pairing operator with 10,000 brokers' worth of requests.

Run: ``.venv/bin/python -m benchmarks.pairing_state [--brokers N] [--rounds R] [--spark]``

Workload: one controller sends LeaderAndIsr + UpdateMetadata to every broker, R rounds; the lines of all
brokers interleave in event time (as the merged logs of a big cluster do), and every request completes except
1 in 50 LeaderAndIsr that stays open (never_completed after the timeout). Each micro-batch carries one round.
Measures, per CPU second of this process: events/s through `pairing.step` (the operator's per-key logic), the
JSON state bytes kept across all keys after each round (what the state store holds), and with --spark the
same workload through the log batches' group function (`applyInPandas` over (cluster, bucket) groups, what a batch the
executors processed runs) in one local Spark job (events/s, wall).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--spark", action="store_true", help="also run the Spark operator (slow to start)")
    a = p.parse_args()
    run_pure(a.brokers, a.rounds)
    if a.spark:
        run_spark(a.brokers, a.rounds)


if __name__ == "__main__":
    main()
