"""`planewatch scenario NAME [--dir DIR]`: run one incident of the seeds on a fresh reference cluster.

    planewatch scenario healthy|produce-backlog|connection-storm|fetcher-lock|broker-bounce|controller-failover
    planewatch scenario metadata-lag|broker-fenced|controller-overload|quorum-unstable|elections --kafka 4.4.0
    planewatch scenario rolling-restart-timer|rolling-restart-gated|rolling-restart-driven|rolling-restart-isr-gated
        --kafka 3.9.1|4.4.0 [--roll-check-lake DIR]

Each scenario starts its own cluster under ``DIR`` (default ``var/scenario/NAME``), is bounded in time, stops the
cluster at the end, and prints what it did and when as JSON lines (also appended to ``DIR/scenario-NAME.jsonl``,
or to ``--timeline FILE``). The two-part scenarios can also run one half at a time, each with its cluster directly
under ``DIR/cluster`` (what `planewatch demo` does, so that every run is its own cluster in the lake):
produce-backlog-with-control-plane, produce-backlog-without-control-plane, fetcher-lock-locked, fetcher-lock-async.

``--kafka VERSION`` runs the scenario on Apache Kafka itself (``planewatch.kafka.scenarios``): healthy, the two
produce-backlog halves, connection-storm, broker-bounce and controller-failover in ZooKeeper mode (below 4.0),
metadata-lag, broker-fenced, controller-overload, quorum-unstable and elections on KRaft (4.x, or ``--kraft``; elections
needs 4.1+'s eligible leader replicas). fetcher-lock
(KAFKA-6974's async fetcher) and the cacheable UpdateMetadata exist on the reference broker only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.scenarios.base import Timeline

NAMES = ("healthy", "produce-backlog", "connection-storm", "fetcher-lock", "broker-bounce", "controller-failover",
         "metadata-lag", "broker-fenced", "controller-overload", "quorum-unstable", "elections",
         "metadata-publish-slow", "rolling-restart-timer", "rolling-restart-gated", "rolling-restart-driven",
         "rolling-restart-isr-gated")
# The scenarios of KRaft's own mechanisms: Apache Kafka only (planewatch.kafka.scenarios.KRAFT_ONLY).
KRAFT_NAMES = ("metadata-lag", "broker-fenced", "controller-overload", "quorum-unstable", "elections",
               "metadata-publish-slow")
# Apache Kafka in either mode only (planewatch.kafka.rolls).
KAFKA_NAMES = ("rolling-restart-timer", "rolling-restart-gated", "rolling-restart-driven",
         "rolling-restart-isr-gated")
HALVES = ("produce-backlog-with-control-plane", "produce-backlog-without-control-plane", "fetcher-lock-locked",
          "fetcher-lock-async")


def runs() -> dict[str, Callable[[Path, Timeline], object]]:
    """Every runnable name: the scenarios and the halves of the two-part ones."""
    from broker.scenarios.library import SCENARIOS, fetcher_lock_run, produce_backlog_run

    out: dict[str, Callable[[Path, Timeline], object]] = dict(SCENARIOS)
    out["produce-backlog-with-control-plane"] = partial(produce_backlog_run, control=True)
    out["produce-backlog-without-control-plane"] = partial(produce_backlog_run, control=False)
    out["fetcher-lock-locked"] = partial(fetcher_lock_run, model="locked")
    out["fetcher-lock-async"] = partial(fetcher_lock_run, model="async")
    return out


def configure(parser: argparse.ArgumentParser) -> None:
    from planewatch.kafka.cluster import SCRAPE_INTERVAL_S
    from planewatch.kafka.configs import LOG4J_PROFILES
    from planewatch.kafka.exporters import DEFAULT_EXPORTER, EXPORTERS

    parser.add_argument("name", choices=NAMES + HALVES, help="which scenario")
    parser.add_argument("--dir", type=Path, default=None, help="where the cluster lives (var/scenario/NAME)")
    parser.add_argument("--kafka", metavar="VERSION", default=None,
                        help="run on Apache Kafka VERSION (e.g. 3.9.1, 4.4.0) instead of the reference broker")
    parser.add_argument("--kraft", action="store_true", help="with --kafka below 4.0: a KRaft cluster")
    parser.add_argument("--exporter", default=DEFAULT_EXPORTER, choices=sorted(EXPORTERS),
                        help="with --kafka: whose JMX exporter namings (planewatch/kafka/exporters.py)")
    parser.add_argument("--scrape-interval", type=float, default=SCRAPE_INTERVAL_S, metavar="SECONDS",
                        help="with --kafka: how often the exporters are scraped (the cluster stays up for a scrape)")
    parser.add_argument("--log4j", default=LOG4J_PROFILES[0], choices=LOG4J_PROFILES,
                        help="with --kafka: planewatch's logger levels (every witness on) or those Kafka ships")
    parser.add_argument("--roll-check-lake", type=Path, default=None, metavar="DIR",
                        help="with --kafka: the lake a pipeline writes for this cluster (rolling-restart-gated "
                             "runs planewatch roll-check on it; the cluster's name there is DIR's name of --dir)")
    parser.add_argument("--ship-to", default=None, metavar="BOOTSTRAP",
                        help="with --kafka: rsyslog ships the brokers' log files to this logging Kafka cluster "
                             "(hosts named kafka-<id>.<cluster>; conf/rsyslog/planewatch.conf)")
    parser.add_argument("--ship-topic", default="kafka-logs", metavar="TOPIC", help="with --ship-to: the topic")
    parser.add_argument("--ship-cluster", default=None, metavar="NAME",
                        help="with --ship-to: the cluster's name in the shipped host names (default: --dir's name)")
    parser.add_argument("--timeline", type=Path, default=None, metavar="FILE",
                        help="where the JSON-lines timeline is appended (default DIR/scenario-NAME.jsonl)")


def run(args: argparse.Namespace) -> int:
    from broker.scenarios.base import Timeline

    d: Path = args.dir or Path("var/scenario") / args.name
    d.mkdir(parents=True, exist_ok=True)
    timeline: Path = args.timeline or d / f"scenario-{args.name}.jsonl"
    timeline.parent.mkdir(parents=True, exist_ok=True)
    tl = Timeline(args.name, timeline)
    if args.kafka:
        return _run_kafka(args, d, tl)
    if args.name in KRAFT_NAMES:
        print(f"planewatch scenario {args.name}: a KRaft scenario; run it with --kafka 4.x", file=sys.stderr)
        return 2
    if args.name in KAFKA_NAMES:
        print(f"planewatch scenario {args.name}: an Apache Kafka scenario; run it with --kafka VERSION",
              file=sys.stderr)
        return 2
    tl.emit("scenario-started", dir=str(d))
    return _play(args.name, tl, lambda: runs()[args.name](d, tl), (RuntimeError, TimeoutError))


def _play(name: str, tl: Timeline, scenario: Callable[[], object],
          failures: tuple[type[BaseException], ...]) -> int:
    """Run a scenario; its end (finished, failed with the reason, interrupted) in the timeline; the exit code."""
    try:
        scenario()
    except failures as exc:
        tl.emit("scenario-failed", error=str(exc))
        print(f"planewatch scenario {name}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        tl.emit("scenario-interrupted")
        return 130
    tl.emit("scenario-finished")
    return 0


def _run_kafka(args: argparse.Namespace, d: Path, tl: Timeline) -> int:
    from confluent_kafka import KafkaException

    from planewatch.kafka.artifacts import ArtifactMissing
    from planewatch.kafka.cluster import KafkaSetup
    from planewatch.kafka.scenarios import SCENARIOS, scenario_names
    from planewatch.kafka.shipper import ShipTo

    ship = None if args.ship_to is None else ShipTo(args.ship_to, args.ship_topic, args.ship_cluster or d.name)
    setup = KafkaSetup(args.kafka, True if args.kraft else None, args.exporter, args.log4j, args.scrape_interval,
                       args.roll_check_lake, ship)
    try:
        names = scenario_names(setup)
    except ValueError as exc:
        print(f"planewatch scenario: {exc}", file=sys.stderr)
        return 2
    if args.name not in names:
        print(f"planewatch scenario {args.name}: Apache Kafka {args.kafka} does not have this mechanism here "
              f"(it runs: {', '.join(names)}; fetcher-lock and cacheable UpdateMetadata are reference-broker "
              f"designs)", file=sys.stderr)
        return 2
    tl.emit("scenario-started", dir=str(d), engine="apache-kafka", kafka_version=args.kafka, exporter=args.exporter,
            log4j=args.log4j)
    return _play(args.name, tl, lambda: SCENARIOS[args.name](d, tl, setup),
                 (RuntimeError, TimeoutError, ArtifactMissing, ValueError, KafkaException))
