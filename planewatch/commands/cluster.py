"""`planewatch cluster`: not built yet (see the open issues)."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("planewatch cluster: not built yet", file=sys.stderr)
    return 2
