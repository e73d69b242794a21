"""The `planewatch` console script.

Every command lives in its own module under `planewatch.commands` with two functions:
`configure(parser)` adds its arguments, `run(args) -> int` does the work (heavy imports happen inside `run`,
so `planewatch --help` stays fast).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from broker.lifecycle import STOP_SIGNALS, watch_parent
from planewatch import __version__

# name -> (module under planewatch.commands, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "broker": ("broker", "run the reference Kafka broker from a properties file"),
    "control": ("control", "send LeaderAndIsr / UpdateMetadata / StopReplica to a broker, as a controller would"),
    "cluster": ("cluster", "run a reference cluster: a controller and N brokers on 127.0.0.1"),
    "scenario": ("scenario", "reproduce a control-plane incident on a running reference cluster"),
    "pipeline": ("pipeline", "run the streaming jobs: logs and metrics into Delta, detection, alerts"),
    "parse": ("parse", "parse Kafka logs or metrics in batch: JSON lines out, rejects on stderr"),
    "api": ("api", "serve alerts, latencies and metrics over REST and a dashboard page"),
    "sql": ("sql", "run SQL over the Delta tables"),
    "roll-check": ("roll_check", "may the next broker be restarted now? (exit 0 safe, 1 wait, 2 unknown)"),
    "roll": ("roll", "restart a cluster's nodes one by one, each after a safe verdict, controllers last"),
    "demo": ("demo", "the main job: cluster, incidents, pipeline and API on embedded defaults"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planewatch",
        description="Watch Kafka's control plane: a reference broker and the analytics that catch its incidents.",
    )
    parser.add_argument("--version", action="version", version=f"planewatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(f"planewatch.commands.{module}").configure(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = importlib.import_module(f"planewatch.commands.{args._module}")
    # SIGTERM and SIGHUP stop a command exactly as Ctrl-C does (commands that handle signals themselves override
    # this); a command started by a planewatch parent stops when that parent dies.
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in STOP_SIGNALS}
    watch_parent()
    try:
        rc: int = module.run(args)
    except KeyboardInterrupt:
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return rc


if __name__ == "__main__":
    sys.exit(main())
