"""Polling for a condition in tests: a bounded wait that returns as soon as the condition holds."""

from __future__ import annotations

import time
from collections.abc import Callable

# How often a condition is checked: short enough to add no visible delay, long enough not to busy-spin a core.
POLL_INTERVAL_S = 0.01


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Return once ``predicate()`` is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(POLL_INTERVAL_S)
    raise AssertionError(f"timed out waiting for {what}")
