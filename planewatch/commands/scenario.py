"""`planewatch scenario NAME [--dir DIR]`: run one incident of the seeds on a fresh reference cluster.

    planewatch scenario healthy|produce-backlog|connection-storm|fetcher-lock|broker-bounce|controller-failover

Each scenario starts its own cluster under ``DIR`` (default ``var/scenario/NAME``), is bounded in time, stops the
cluster at the end, and prints what it did and when as JSON lines (also appended to ``DIR/scenario-NAME.jsonl``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAMES = ("healthy", "produce-backlog", "connection-storm", "fetcher-lock", "broker-bounce", "controller-failover")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=NAMES, help="which scenario")
    parser.add_argument("--dir", type=Path, default=None, help="where the cluster lives (var/scenario/NAME)")


def run(args: argparse.Namespace) -> int:
    from broker.scenarios.base import Timeline
    from broker.scenarios.library import SCENARIOS

    d: Path = args.dir or Path("var/scenario") / args.name
    d.mkdir(parents=True, exist_ok=True)
    tl = Timeline(args.name, d / f"scenario-{args.name}.jsonl")
    tl.emit("scenario-started", dir=str(d))
    try:
        SCENARIOS[args.name](d, tl)
    except (RuntimeError, TimeoutError) as exc:
        tl.emit("scenario-failed", error=str(exc))
        print(f"planewatch scenario {args.name}: {exc}", file=sys.stderr)
        return 1
    tl.emit("scenario-finished")
    return 0
