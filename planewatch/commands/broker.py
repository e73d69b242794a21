"""`planewatch broker`: run the reference Kafka broker from a properties file until SIGINT/SIGTERM.

    planewatch broker --config conf/broker.properties [--override key=value ...]

Prints the bound listeners (name, host:port, plane), where server.log / state-change.log / kafka-request.log and
the JSON-lines metrics go, and the Prometheus endpoint when ``prometheus.port`` is set. A bad configuration prints
Kafka's ConfigException message naming the key and exits 1; a port that cannot be bound exits 1 too.
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from broker.lifecycle import STOP_SIGNALS

GIL_SWITCH_INTERVAL_S = 0.0005
GC_THRESHOLDS = (50_000, 20, 100)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, required=True, metavar="FILE",
                        help="broker properties file (Kafka's server.properties syntax)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="override a property (repeatable), like kafka-server-start.sh --override")
    parser.add_argument("--seconds", type=float, default=0.0, metavar="N",
                        help="stop after N seconds (default 0: run until SIGINT/SIGTERM)")


def serve(config_path: Path | None, overrides: list[str], seconds: float = 0.0, out: Any = None) -> int:
    """Load the config, start a KafkaServer, print its listeners, wait for a signal (or ``seconds``), shut down."""
    from broker.config import ConfigException, load_config
    from broker.server import KafkaServer

    out = out or sys.stdout
    # CPython hands the GIL to another runnable thread every 5 ms by default. A request crossing processor ->
    # handler -> processor needs several hand-overs, so under CPU-heavy data-plane load a control request would wait
    # ~5 ms per hop per busy thread. 0.5 ms keeps KIP-291's dedicated threads responsive at a small throughput cost.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    # Request handling churns many short-lived dicts (a Metadata answer for thousands of partitions); CPython's
    # default gen-0 threshold (700) then triggers full collections often enough to pause every thread for tens of
    # milliseconds. A larger threshold keeps collections rare; start-up objects are frozen out of them.
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        config = load_config(config_path, overrides)
    except ConfigException as e:
        print(f"planewatch broker: invalid configuration: {e}", file=sys.stderr)
        return 1
    server = KafkaServer(config)
    try:
        server.startup()
    except OSError as e:
        print(f"planewatch broker: cannot start: {e}", file=sys.stderr)
        return 1
    gc.freeze()
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        del signum, frame
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        print(f"broker {config.broker_id} started", file=out)
        for lst in server.listeners():
            print(f"  listener {lst.name:<12} {lst.host or '0.0.0.0'}:{lst.port:<6} {lst.plane}", file=out)
        print(f"  logs       {config.kafka_logs_dir}", file=out)
        print(f"  metrics    {config.metrics_dir}", file=out)
        if server.prometheus is not None:
            print(f"  prometheus http://127.0.0.1:{server.prometheus.port}/metrics", file=out)
        out.flush()
        stop.wait(seconds if seconds > 0 else None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.shutdown()
        print(f"broker {config.broker_id} stopped", file=out)
    return 0


def run(args: argparse.Namespace) -> int:
    return serve(args.config, list(args.override), args.seconds)
