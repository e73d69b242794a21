"""A slow request's baseline, per batch: the hour of its cluster's requests read from the lake every batch (what
the pipeline did) against the window kept between batches (jobs.detect.latency_history).

    .venv/bin/python -m benchmarks.baseline_history [--brokers 500] [--minutes 60] [--batches 20]

One cluster's `control_request_latency` as the pipeline leaves it after `--minutes`: a commit every BATCH_S with the
requests of those seconds (each broker gets a LeaderAndIsr and an UpdateMetadata a minute, as the fleet benchmark's
load), then the same compacted into one file per day (the maintenance's compaction). Then `--batches` batches, each
appending its requests and asking the baseline of one slow request: the time per batch of each way, and whether the
two give the same baseline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from jobs.detect.latency_history import LatencyHistory
from lake.read import LatestTable
from pipelines.detection.baselines import add_baselines, history_spans
from pipelines.detection.candidates import frame as polars_frame
from pipelines.detection.config import DetectionConfig
from schemas.tables import CONTROL_REQUEST_LATENCY

# A micro-batch this often (the fleet benchmark's steady batches take 3-5 s).
BATCH_S = 3.0
# Control requests per broker per minute (benchmarks.fleet_load: a LeaderAndIsr and an UpdateMetadata a minute).
REQUESTS_PER_BROKER_MINUTE = 2
T0 = dt.datetime(2026, 12, 7, 0, 0, tzinfo=dt.UTC)
CFG = DetectionConfig()
WINDOW = dt.timedelta(seconds=CFG.baseline_window_s)


class _Load:
    def __init__(self, brokers: int) -> None:
        self.brokers = brokers
        self.n = 0

    def batch(self, start: dt.datetime) -> pa.Table:
        """The requests sent in the BATCH_S from `start`."""
        per_s = self.brokers * REQUESTS_PER_BROKER_MINUTE / 60.0
        count = max(1, round(per_s * BATCH_S))
        rows = []
        for k in range(count):
            self.n += 1
            sent = start + dt.timedelta(seconds=BATCH_S * k / count)
            e2e = 40.0 + (self.n * 7919) % 400
            rows.append({"cluster": "fleet", "broker_id": 1 + self.n % self.brokers, "controller_id": 0,
                         "controller_epoch": 1, "correlation_id": self.n,
                         "request": "LeaderAndIsr" if self.n % 2 else "UpdateMetadata", "sent_ts": sent,
                         "handling_ts": sent, "finished_ts": sent + dt.timedelta(milliseconds=e2e),
                         "end_to_end_ms": e2e, "queue_ms": 1.0, "processing_ms": e2e - 1, "lock_wait_ms": 0.0,
                         "partitions": 10, "status": "completed", "pairing": "correlation_id", "updated_at": sent,
                         "request_key": f"r{self.n}", "flags": None, "controller_queue_ms": 0.0,
                         "date": sent.date()})
        return pa.Table.from_pylist(rows, CONTROL_REQUEST_LATENCY.to_arrow())


def _append(path: str, rows: pa.Table) -> None:
    write_deltalake(path, rows, partition_by=list(CONTROL_REQUEST_LATENCY.partition_by), mode="append")


def _slow(at: dt.datetime, broker: int) -> dict[str, Any]:
    return {"type": "DELAYED_LEADER_AND_ISR", "cluster": "fleet", "broker_id": broker, "ts": at, "summary": "slow",
            "evidence": {"request_key": "slow"}}


def _run(path: str, load: _Load, at: dt.datetime, batches: int) -> tuple[list[float], list[float], bool]:
    """Per batch: the lake read's seconds, the kept window's, and whether every baseline agreed."""
    lake = LatestTable(path, CONTROL_REQUEST_LATENCY.to_arrow())
    kept = LatencyHistory(LatestTable(path, CONTROL_REQUEST_LATENCY.to_arrow()), WINDOW)
    read_s, kept_s, same = [], [], True
    kept.rows_for([_slow(at, 1)])  # the first read of the cluster (once per process)
    for b in range(batches):
        rows = load.batch(at)
        _append(path, rows)
        at += dt.timedelta(seconds=BATCH_S)
        cand = [_slow(at, 1 + b % load.brokers)]
        c1 = [{**cand[0], "evidence": dict(cand[0]["evidence"])}]
        t = time.perf_counter()
        add_baselines(c1, polars_frame(lake.read_spans(history_spans(cand, WINDOW), "sent_ts")), WINDOW, CFG)
        read_s.append(time.perf_counter() - t)
        c2 = [{**cand[0], "evidence": dict(cand[0]["evidence"])}]
        t = time.perf_counter()
        kept.observe(rows)
        add_baselines(c2, kept.rows_for(cand), WINDOW, CFG)
        kept_s.append(time.perf_counter() - t)
        same = same and c1[0]["evidence"].get("baseline") == c2[0]["evidence"].get("baseline") is not None
    return read_s, kept_s, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args(argv)
    path = str(Path(tempfile.mkdtemp(prefix="pw-baseline-")) / "control_request_latency")
    load = _Load(args.brokers)
    at = T0
    t = time.perf_counter()
    while at < T0 + dt.timedelta(minutes=args.minutes):
        _append(path, load.batch(at))
        at += dt.timedelta(seconds=BATCH_S)
    print(f"one cluster of {args.brokers} brokers, {args.minutes:g} minutes: {load.n:,} requests in "
          f"{DeltaTable(path).version():,} commits (written in {time.perf_counter() - t:.0f} s); baseline window "
          f"{WINDOW.total_seconds() / 60:g} min; {args.batches} batches each:")
    print(f"  {'lake layout':<34} {'lake read per batch (p50 / max)':>32} {'kept window (p50 / max)':>26}  same")
    for label in ("a commit per batch (no compaction)", "compacted (maintenance)"):
        if label.startswith("compacted"):
            table = DeltaTable(path)
            table.optimize.compact()
            table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        read_s, kept_s, same = _run(path, load, at, args.batches)
        at += dt.timedelta(seconds=BATCH_S * args.batches)
        print(f"  {label:<34} {statistics.median(read_s) * 1e3:>21.1f} / {max(read_s) * 1e3:6.1f} ms "
              f"{statistics.median(kept_s) * 1e3:>15.1f} / {max(kept_s) * 1e3:6.1f} ms  {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
