"""The controller process: ``python -m broker.cluster.controller_main --dir DIR [--port P] ...``.

Logs (controller.log, state-change.log at TRACE) go to ``DIR/logs``, JSON-lines metrics to ``DIR/metrics``, the
persisted state to ``DIR/controller-state.json``; the bound registration port is written to ``DIR/port`` once
serving. Runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from broker.cluster.controller import Controller, ControllerSettings
from broker.cluster.http import ControllerHttpServer
from broker.lifecycle import STOP_SIGNALS, watch_parent
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.metrics.reporter import JsonLinesReporter

__all__ = ["main"]

METRICS_INTERVAL_MS = 5000
METRICS_ROLL_BYTES = 64 * 1024 * 1024
METRICS_ROLL_MS = 3_600_000


def main(argv: list[str] | None = None) -> int:
    """Run the controller until a stop signal, or until the launcher that started it dies."""
    parser = argparse.ArgumentParser(prog="broker.cluster.controller_main")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--update-metadata-cached", choices=("true", "false"), default="true")
    parser.add_argument("--control-plane-listener", default="CONTROLLER",
                        help="control.plane.listener.name on the controller side ('' = none: old controller)")
    parser.add_argument("--inter-broker-listener", default="PLAINTEXT")
    args = parser.parse_args(argv)
    d: Path = args.dir
    d.mkdir(parents=True, exist_ok=True)
    log4j = Log4j().configure(d / "logs", controller_log=True, state_change_level="TRACE")
    registry = MetricsRegistry()
    settings = ControllerSettings(args.session_timeout_ms, args.update_metadata_cached == "true",
                                  args.control_plane_listener or None, args.inter_broker_listener)
    controller = Controller(d, log4j, registry, settings)
    reporter = JsonLinesReporter(registry, d / "metrics", -1, METRICS_INTERVAL_MS, METRICS_ROLL_BYTES,
                                 METRICS_ROLL_MS)
    controller.start()
    http = ControllerHttpServer(controller, args.port)
    http.start()
    reporter.start()
    (d / "port.tmp").write_text(str(http.port))
    (d / "port.tmp").replace(d / "port")
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda s, f: stop.set())
    watch_parent()
    try:
        stop.wait()
    finally:
        http.shutdown()
        controller.shutdown()
        reporter.shutdown()
        log4j.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
