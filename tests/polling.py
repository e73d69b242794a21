"""Polling for a condition in tests: a bounded wait that returns as soon as the condition holds.

The one way a test waits (it polls; it does not sleep and hope)::

    wait_until(lambda: server.connection_count() == 0, what="all connections closed")
    leader = wait_until(lambda: partition(cluster, "t", 0), 30, "a leader of t-0", ignoring=UNREACHABLE)

A condition that does work each time (consumes a batch, sends a request) is a function returning whether it is
done; ``what`` may be a function, called only on the timeout, for a message that names the state reached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import TypeVar

T = TypeVar("T")

# How often a condition is checked: short enough to add no visible delay, long enough not to busy-spin a core.
POLL_INTERVAL_S = 0.01


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float = 10.0,
    what: str | Callable[[], object] = "condition",
    *,
    interval: float = POLL_INTERVAL_S,
    ignoring: tuple[type[Exception], ...] = (),
) -> T:
    """The first truthy value ``predicate()`` returns, checked every ``interval`` seconds (and once more at the
    deadline); AssertionError naming ``what`` after ``timeout`` seconds. An exception of ``ignoring`` raised by
    ``predicate`` counts as not yet (a server still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except ignoring:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what() if callable(what) else what}")
        time.sleep(interval)


def threads_since(before: Collection[threading.Thread]) -> list[str]:
    """The names of the threads alive now that were not in ``before``: what a stopped server left running, for
    ``wait_until(lambda: not threads_since(before), ...)``."""
    return sorted(t.name for t in set(threading.enumerate()) - set(before) if t.is_alive())
