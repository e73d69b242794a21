"""A backlog of log files read batch by batch: by log time (planewatch's file source, jobs.sources.time_align) against
listing order (what the source did before, and what a tail of each file in turn does).

    .venv/bin/python -m benchmarks.backlog_plan [--brokers 30] [--minutes 60] [--budget-mib 64]

Writes an hour of one controller's state-change.log (a `Sending` line per broker every 2 s) and each broker's
(its `Handling` lines) into a temporary directory (removed at the end), then plans batches of `--budget-mib` until
everything is read, both ways. Per way it prints the batches, the plan time per batch (ms), and the skew: in each
batch, how far the newest record read (in any file) is ahead of the oldest record left unread (in any file), the
time a controller's send waits in the pairing for its broker's answer to be read. Run it alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jobs.sources import file_tail
from jobs.sources.time_align import line_time

T0 = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
# Every this many seconds the controller sends each broker a request (the soak's chatter: 30 brokers, 15 lines/s).
SEND_EVERY_S = 2.0
# Batches planned at most, either way (a bounded loop).
MAX_BATCHES = 10_000


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def write_backlog(root: Path, brokers: int, minutes: int) -> int:
    """The controller's and the brokers' state-change logs of `minutes`; returns the bytes written."""
    steps = int(minutes * 60 / SEND_EVERY_S)
    ctl = [f"[{_stamp(T0 + dt.timedelta(seconds=i * SEND_EVERY_S))}] INFO [Controller id=1 epoch=9] Sending "
           f"UpdateMetadata request to brokers Set({b}) for 12 partitions (state.change.logger)"
           for i in range(steps) for b in range(1, brokers + 1)]
    (root / "broker-1").mkdir(parents=True, exist_ok=True)
    (root / "broker-1" / "controller.log").write_text("\n".join(ctl) + "\n")
    total = sum(len(x) + 1 for x in ctl)
    for b in range(1, brokers + 1):
        lines = [f"[{_stamp(T0 + dt.timedelta(seconds=i * SEND_EVERY_S, milliseconds=5))}] INFO [Broker id={b}] "
                 f"Add 12 partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata "
                 f"request sent by controller 1 epoch 9 with correlation id {i} (state.change.logger)"
                 for i in range(steps)]
        d = root / f"broker-{b}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "state-change.log").write_text("\n".join(lines) + "\n")
        total += sum(len(x) + 1 for x in lines)
    return total


def _first_time(path: str, offset: int) -> float | None:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return line_time(fh.readline())


def _last_time(path: str, start: int, end: int) -> float | None:
    with open(path, "rb") as fh:
        fh.seek(max(start, end - 4096))
        lines = fh.read(end - max(start, end - 4096)).split(b"\n")
    return max((t for ln in lines if (t := line_time(ln)) is not None), default=None)


def run(root: Path, budget: int, aligned: bool) -> dict[str, Any]:
    """Plan batches until the backlog is read; per batch the plan time and the skew (s)."""
    real = file_tail._aligned
    if not aligned:
        file_tail._aligned = lambda *_a, **_k: None
    try:
        start: dict[str, Any] = {}
        plan_ms: list[float] = []
        skews: list[float] = []
        for _ in range(MAX_BATCHES):
            t0 = time.perf_counter()
            end = file_tail.plan(str(root), "logs", start, budget, now=time.time() + 3600).files
            plan_ms.append((time.perf_counter() - t0) * 1e3)
            if sum(int(v["offset"]) - int(v["from"]) for v in end.values()) == 0:
                break
            newest = max((t for v in end.values() if int(v["offset"]) > int(v["from"])
                          and (t := _last_time(v["path"], int(v["from"]), int(v["offset"]))) is not None), default=None)
            oldest = min((t for v in end.values() if int(v["offset"]) < int(v["size"])
                          and (t := _first_time(v["path"], int(v["offset"]))) is not None), default=None)
            if newest is not None and oldest is not None:
                skews.append(max(0.0, newest - oldest))
            start = end
    finally:
        file_tail._aligned = real
    return {"batches": len(plan_ms) - 1, "plan_ms_median": statistics.median(plan_ms),
            "plan_ms_max": max(plan_ms), "skew_s_median": statistics.median(skews) if skews else 0.0,
            "skew_s_max": max(skews, default=0.0)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", type=int, default=30)
    p.add_argument("--minutes", type=int, default=60)
    p.add_argument("--budget-mib", type=float, default=64.0, help="the batch budget (sources.files.max_bytes...)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="backlog-plan-") as tmp:
        root = Path(tmp) / "c1"
        size = write_backlog(root, a.brokers, a.minutes)
        budget = int(a.budget_mib * 1024 * 1024)
        print(f"backlog: {a.brokers} brokers' and the controller's state-change logs, {a.minutes} min, "
              f"{size / 2**20:.1f} MiB; batch budget {a.budget_mib:g} MiB")
        print(f"{'way':<16}{'batches':>8}{'plan ms (median / max)':>26}{'skew s (median / max)':>26}")
        for name, aligned in (("listing order", False), ("by log time", True)):
            r = run(root, budget, aligned)
            print(f"{name:<16}{r['batches']:>8}{r['plan_ms_median']:>14.1f} / {r['plan_ms_max']:<9.1f}"
                  f"{r['skew_s_median']:>14.1f} / {r['skew_s_max']:.1f}")


if __name__ == "__main__":
    main()
