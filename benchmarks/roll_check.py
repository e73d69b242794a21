"""How fast the roll-safety verdict answers on a lake at production scale: can a roll script poll it every second?

    .venv/bin/python -m benchmarks.roll_check [--nodes 33] [--minutes 60] [--calls 40]

Writes (under one temp dir, removed at the end) an hour of metric samples of 30 brokers and 3 KRaft controllers
scraped every 5 s (the verdict's ten signals and forty others per node, as a kafka-2_0_0 scrape carries many more
than the verdict reads), in twelve 5-minute commits, ending now; then times:

* the verdict as GET /clusters/{cluster}/roll-safety and `planewatch roll-check` compute it (api.roll_safety over
  one LakeStore: the partition- and statistics-pruned DataFusion query), first call and repeated calls;
* `planewatch roll-check` as a script runs it (a new Python process each time: imports, lake open, one verdict);
* what a script without planewatch's pruning would do with the same lake: read metric_samples whole
  (delta-rs to Arrow) and take each node's newest values of the same signals.

Prints p50/p99/max per way and the verdict (polling every second needs the repeated call's p99 under 1 s).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.exit import exit_with
from pipelines.roll_safety import ROLL_SIGNALS
from schemas.tables import METRIC_SAMPLES

CLUSTER = "bench"
SCRAPE_S = 5
COMMITS = 12
OTHER_SIGNALS = 40
CONTROLLER_IDS = (100, 101, 102)
# healthy values per roll signal (a KRaft cluster whose leader is 100)
HEALTHY = {"RaftCurrentLeader": 100.0, "ActiveControllerCount": 0.0, "MetadataApplyLagMs": 120.0,
           "LastAppliedRecordLagMs": 80.0}


def _write_lake(lake: Path, nodes: int, minutes: int) -> int:
    from deltalake import write_deltalake

    brokers = list(range(1, nodes - len(CONTROLLER_IDS) + 1))
    ids = brokers + list(CONTROLLER_IDS)
    signals = list(ROLL_SIGNALS) + [f"OtherSignal{i}" for i in range(OTHER_SIGNALS)]
    end = datetime.now(UTC).replace(microsecond=0)
    start = end - timedelta(minutes=minutes)
    steps = np.arange(0, minutes * 60, SCRAPE_S)
    per_commit = len(steps) // COMMITS
    rows = 0
    schema = METRIC_SAMPLES.to_arrow()
    for c in range(COMMITS):
        chunk = steps[c * per_commit:(c + 1) * per_commit]
        n = len(chunk) * len(ids) * len(signals)
        naive = start.replace(tzinfo=None)  # numpy's datetime64 has no zone: UTC wall time
        ts = np.repeat(np.array([naive + timedelta(seconds=int(s)) for s in chunk], dtype="datetime64[us]"),
                       len(ids) * len(signals))
        node = np.tile(np.repeat(np.array(ids, dtype=np.int32), len(signals)), len(chunk))
        sig = np.tile(np.array(signals, dtype=object), len(chunk) * len(ids))
        value = np.array([HEALTHY.get(s, 0.0) for s in sig], dtype=np.float64)
        value[(sig == "ActiveControllerCount") & (node == 100)] = 1.0
        attr = np.where(sig == "EventQueueTimeMs", "99thPercentile", "Value")
        cols = {"cluster": pa.array([CLUSTER] * n), "broker_id": pa.array(node), "ts": pa.array(ts, pa.timestamp(
            "us", "UTC")), "signal": pa.array(sig, pa.string()), "attribute": pa.array(attr, pa.string()),
            "value": pa.array(value), "source": pa.array(["bench"] * n),
            "source_offset": pa.array(np.arange(n, dtype=np.int64)),
            "date": pa.array(ts.astype("datetime64[D]"), pa.date32())}
        table = pa.table({f.name: cols.get(f.name, pa.nulls(n, f.type)).cast(f.type) for f in schema}, schema=schema)
        write_deltalake(str(lake / METRIC_SAMPLES.name), table, mode="append",
                        partition_by=list(METRIC_SAMPLES.partition_by))
        rows += n
    return rows


def _stats(times: list[float]) -> str:
    ms = sorted(t * 1e3 for t in times)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):8.1f} ms  p99 {p99:8.1f} ms  max {ms[-1]:8.1f} ms  ({len(ms)} calls)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=33)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    from api.roll_safety import cluster_verdict
    from api.store import LakeStore

    tmp = Path(tempfile.mkdtemp(prefix="roll-check-bench-"))
    try:
        lake = tmp / "lake"
        t0 = time.perf_counter()
        rows = _write_lake(lake, args.nodes, args.minutes)
        print(f"lake: {rows:,} metric samples ({args.nodes} nodes, {args.minutes} min at {SCRAPE_S} s, "
              f"{COMMITS} commits) written in {time.perf_counter() - t0:.1f} s")
        store = LakeStore(lake, refresh_interval_s=0.0, background_reload=False)
        try:
            t = time.perf_counter()
            v = cluster_verdict(store, CLUSTER, datetime.now(UTC))
            first = time.perf_counter() - t
            times = []
            for _ in range(args.calls):
                t = time.perf_counter()
                v = cluster_verdict(store, CLUSTER, datetime.now(UTC))
                times.append(time.perf_counter() - t)
        finally:
            store.close()
        print(f"verdict: {v.verdict.value} ({v.mode}, {len(v.nodes)} nodes)")
        print(f"API / in-process verdict, first call   {first * 1e3:8.1f} ms")
        print(f"API / in-process verdict, repeated     {_stats(times)}")
        cli = []
        for _ in range(max(3, args.calls // 8)):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "planewatch.cli", "roll-check", "--cluster", CLUSTER, "--lake",
                            str(lake)], capture_output=True, check=False, timeout=120)
            cli.append(time.perf_counter() - t)
        print(f"planewatch roll-check (new process)    {_stats(cli)}")
        naive = []
        for _ in range(max(3, args.calls // 8)):
            t = time.perf_counter()
            _naive_newest(lake)
            naive.append(time.perf_counter() - t)
        print(f"whole-table read, newest per node      {_stats(naive)}")
        p99 = sorted(times)[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
        print(f"poll every second: {'yes' if p99 < 1.0 else 'NO'} (repeated verdict p99 {p99 * 1e3:.0f} ms)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _naive_newest(lake: Path) -> pa.Table:
    """Without pruning: the whole metric_samples table, then each node's newest value of the verdict's signals."""
    from deltalake import DeltaTable

    t = DeltaTable(str(lake / METRIC_SAMPLES.name)).to_pyarrow_table(columns=["broker_id", "signal", "ts", "value"])
    t = t.filter(pc.is_in(t["signal"], pa.array(list(ROLL_SIGNALS))))
    return t.group_by(["broker_id", "signal"]).aggregate([("ts", "max")])


if __name__ == "__main__":
    exit_with(main())
