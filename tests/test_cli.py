"""The console script: every command has --help."""

from __future__ import annotations

import subprocess
import sys

import pytest

from planewatch.cli import COMMANDS, build_parser


def test_every_contract_command_is_registered() -> None:
    parser = build_parser()
    assert parser.prog == "planewatch"
    assert set(COMMANDS) >= {"broker", "cluster", "scenario", "pipeline", "parse", "api", "sql", "demo"}


@pytest.mark.parametrize("command", [*COMMANDS, None])
def test_help_exits_zero(command: str | None) -> None:
    argv = [sys.executable, "-m", "planewatch.cli", *([command] if command else []), "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "usage: planewatch" in out.stdout
