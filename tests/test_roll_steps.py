"""`planewatch roll --lake` records every step in roll_steps, each exactly once (a step written again by a roll
started over under the same id changes nothing)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lake.read import open_table, read_table
from planewatch.commands.roll import _Roll
from schemas.tables import ROLL_STEPS


def _rows(lake: Path) -> list[dict[str, object]]:
    return sorted(read_table(open_table(str(lake / ROLL_STEPS.name)), ROLL_STEPS.to_arrow()).to_pylist(),
                  key=lambda r: int(r["step"]))  # type: ignore[call-overload]


def test_each_step_is_recorded_once_with_the_verdict_it_acted_on(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lake = tmp_path / "lake"
    args = argparse.Namespace(lake=lake, cluster="prod", json=True)
    roll = _Roll(args, {}, "prod-1")
    roll.say("gate", node=2, verdict="wait", waited_s=0.1, reasons=["wait REPLICAS_IN_SYNC: broker 1 ..."])
    roll.say("gate", node=2, verdict="safe", waited_s=4.2, reasons=[])
    roll.say("restarted", node=2, controller=False, took_s=6.0)
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["step"] for p in printed] == ["gate", "gate", "restarted"]
    rows = _rows(lake)
    assert [(r["step"], r["kind"], r["node"], r["verdict"]) for r in rows] == [
        (1, "gate", 2, "wait"), (2, "gate", 2, "safe"), (3, "restarted", 2, None)]
    assert json.loads(str(rows[0]["detail"]))["reasons"] == ["wait REPLICAS_IN_SYNC: broker 1 ..."]
    again = _Roll(args, {}, "prod-1")  # the same roll's steps written again: exactly once
    again.say("gate", node=2, verdict="wait", waited_s=0.1, reasons=[])
    assert len(_rows(lake)) == 3
