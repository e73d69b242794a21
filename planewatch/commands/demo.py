"""`planewatch demo` (interim): start the reference broker from conf/broker.properties and print its listeners.

It grows into the full demo (cluster, incidents, pipeline, API) later; for now it is `planewatch broker` on the
repository's conf/broker.properties (looked up in the current directory first, then beside the installed package),
running until Ctrl-C (or --seconds).
"""

from __future__ import annotations

import argparse
from pathlib import Path

_REPO_CONF = Path(__file__).resolve().parents[2] / "conf" / "broker.properties"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="broker properties (default: conf/broker.properties)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="override a broker property (repeatable)")
    parser.add_argument("--seconds", type=float, default=0.0, metavar="N",
                        help="stop after N seconds (default 0: run until Ctrl-C)")


def run(args: argparse.Namespace) -> int:
    from planewatch.commands.broker import serve

    config = args.config
    if config is None:
        local = Path("conf/broker.properties")
        config = local if local.exists() else _REPO_CONF
    print(f"planewatch demo: starting the reference broker from {config} (Ctrl-C stops it)")
    return serve(config, list(args.override), args.seconds)
