"""`planewatch cluster`: a controller and N brokers (separate processes) on 127.0.0.1.

    planewatch cluster --brokers 3 [--dir var/cluster] [--base-port PORT] [--fetcher-model locked|async]
    planewatch cluster --kafka 3.9.1 --brokers 3 [--kraft] [--no-control-plane] [--dir var/cluster]
    planewatch cluster --status --dir var/cluster

Without ``--kafka`` the brokers are planewatch's reference brokers; with it, Apache Kafka itself from the jars the
set-up fetched (``planewatch.kafka``): ZooKeeper mode below 4.0 (``--kraft`` for a 3.x KRaft cluster), KRaft from 4.0.

Runs until SIGINT/SIGTERM, then stops every process cleanly. ``DIR/cluster.json`` describes the cluster for scripts
(bootstrap servers; per broker its id, pid, listeners, log directory, logs, metrics, Prometheus endpoint).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Protocol

from broker.lifecycle import STOP_SIGNALS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    parser.add_argument("--dir", type=Path, default=Path("var/cluster"), help="cluster directory (var/cluster)")
    parser.add_argument("--base-port", type=int, default=0, help="first port (default 0: free ports)")
    parser.add_argument("--fetcher-model", choices=("locked", "async"), default="locked",
                        help="replica.fetcher.model of every broker (default locked, as Kafka 2.x)")
    parser.add_argument("--update-metadata-cached", choices=("true", "false"), default="true",
                        help="controller.update.metadata.cached: one shared UpdateMetadata (true) or per-broker")
    parser.add_argument("--no-control-plane", action="store_true",
                        help="brokers advertise no control-plane listener (KIP-291 off)")
    parser.add_argument("--kafka", metavar="VERSION", default=None,
                        help="run Apache Kafka VERSION (e.g. 3.9.1, 4.4.0) instead of the reference broker")
    parser.add_argument("--kraft", action="store_true",
                        help="with --kafka below 4.0: KRaft mode instead of ZooKeeper (4.x is always KRaft)")
    parser.add_argument("--status", action="store_true", help="show who leads what in a running cluster")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop after N seconds (default: run until a signal)")


def _status(directory: Path) -> int:
    from broker.cluster.http import ControllerClient

    try:
        info = json.loads((directory / "cluster.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"planewatch cluster: no cluster in {directory}: {exc}", file=sys.stderr)
        return 1
    if info.get("engine") == "apache-kafka":
        return _kafka_status(info)
    try:
        st = ControllerClient(info["controller"]["url"], timeout_s=5).status()
    except (OSError, ConnectionError) as exc:
        print(f"planewatch cluster: controller not reachable: {exc}", file=sys.stderr)
        return 1
    print(f"controller id={st['controller_id']} epoch={st['controller_epoch']} "
          f"cached_update_metadata={st['cached_update_metadata']}")
    for bid, b in sorted(st["brokers"].items(), key=lambda kv: int(kv[0])):
        print(f"broker {bid} epoch={b['epoch']} listeners={b['listeners']}")
    print(f"{'partition':<30} {'leader':>6} {'epoch':>5}  replicas  isr")
    for p in st["partitions"]:
        print(f"{p['topic'] + '-' + str(p['partition']):<30} {p['leader']:>6} {p['leader_epoch']:>5}  "
              f"{','.join(map(str, p['replicas'])):<8}  {','.join(map(str, p['isr']))}")
    return 0


def _kafka_status(info: dict[str, object]) -> int:
    """Apache Kafka's own view through its admin API: controller, brokers, leaders and ISRs."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        md = AdminClient({"bootstrap.servers": str(info["bootstrap.servers"])}).list_topics(timeout=10)
    except KafkaException as exc:
        print(f"planewatch cluster: Kafka not reachable: {exc}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {info.get('kafka_version')} ({info.get('mode')}) controller id={md.controller_id}")
    for bid, b in sorted(md.brokers.items()):
        print(f"broker {bid} {b.host}:{b.port}")
    print(f"{'partition':<30} {'leader':>6}  replicas  isr")
    for name, t in sorted(md.topics.items()):
        for pid, p in sorted(t.partitions.items()):
            print(f"{name + '-' + str(pid):<30} {p.leader:>6}  {','.join(map(str, p.replicas)):<8}  "
                  f"{','.join(map(str, p.isrs))}")
    return 0


def _run_kafka(args: argparse.Namespace) -> int:
    from planewatch.kafka.artifacts import ArtifactMissing
    from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec

    try:
        cluster = KafkaCluster(KafkaClusterSpec(args.dir, args.kafka, args.brokers, kraft=True if args.kraft else None,
                                                control_plane=not args.no_control_plane))
    except (ArtifactMissing, ValueError) as exc:
        print(f"planewatch cluster: {exc}", file=sys.stderr)
        return 1
    mode = "KRaft" if cluster.spec.is_kraft else "ZooKeeper mode"
    return _serve(cluster, f"Apache Kafka {args.kafka} ({mode}) cluster of {args.brokers} brokers", args.seconds)


def run(args: argparse.Namespace) -> int:
    if args.status:
        return _status(args.dir)
    if args.kafka:
        if args.brokers < 1:
            print("planewatch cluster: --brokers must be at least 1", file=sys.stderr)
            return 2
        return _run_kafka(args)
    from broker.cluster.launcher import Cluster, ClusterSpec

    if args.brokers < 1:
        print("planewatch cluster: --brokers must be at least 1", file=sys.stderr)
        return 2
    spec = ClusterSpec(args.dir, args.brokers, args.base_port, args.fetcher_model,
                       args.update_metadata_cached == "true", brokers_advertise_control=not args.no_control_plane)
    return _serve(Cluster(spec), f"cluster of {args.brokers} brokers", args.seconds)


class _Runnable(Protocol):
    dir: Path

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def bootstrap_servers(self) -> str: ...


def _serve(cluster: _Runnable, title: str, seconds: float) -> int:
    """Start the cluster, say where it is, run until a signal (or ``seconds``), always stop it."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda s, f: stop.set()) for sig in STOP_SIGNALS}
    try:
        cluster.start()
        print(f"{title} started; bootstrap.servers={cluster.bootstrap_servers()}")
        print(f"  cluster.json {cluster.dir / 'cluster.json'}", flush=True)
        stop.wait(seconds if seconds > 0 else None)
    except RuntimeError as exc:  # a process that did not start (KafkaStartError included)
        print(f"planewatch cluster: {exc}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        cluster.stop()
        print("cluster stopped", flush=True)
    return 0
