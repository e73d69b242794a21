"""lake.failpoints: a named commit step held as PLANEWATCH_FAILPOINTS asks, and nothing otherwise."""

from __future__ import annotations

import time

import pytest

from lake.failpoints import FAILPOINTS_ENV, hold

HOLD_S = 0.2


def _timed(point: str, name: str) -> float:
    t0 = time.monotonic()
    hold(point, name)
    return time.monotonic() - t0


def test_only_the_named_step_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAILPOINTS_ENV, raising=False)
    assert _timed("commit", "quarantine") < HOLD_S / 2
    monkeypatch.setenv(FAILPOINTS_ENV, f"commit:raw_logs=0, commit:quarantine={HOLD_S}")
    assert _timed("commit", "quarantine") >= HOLD_S
    assert _timed("commit", "state_change_events") < HOLD_S / 2


def test_a_malformed_hold_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAILPOINTS_ENV, "commit:quarantine=soon")
    with pytest.raises(ValueError, match=r"PLANEWATCH_FAILPOINTS: 'commit:quarantine=soon' is not point:name="):
        hold("commit", "quarantine")
