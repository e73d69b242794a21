"""The io-wait ratio of a selector loop (Kafka's ``io-wait-ratio``, the source of the IdlePercent gauges)."""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["IoWaitRatio"]

# Kafka's sampled stats keep 2 windows of 30 s; the ratio here is over the last WINDOW_NS, sampled every SAMPLE_NS.
WINDOW_NS: Final = 30_000_000_000
SAMPLE_NS: Final = 1_000_000_000


class IoWaitRatio:
    """Fraction (0..1) of wall time spent waiting in ``select`` over a sliding window.

    ``record`` is called by the loop thread after every select; ``ratio`` may be read from any thread. Before the
    first select has returned nothing was measured: ``ratio`` is NaN then (the metrics reporter writes null), not 0,
    which would read as a saturated network thread on every broker that just started.
    """

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        start = clock()
        self._wait_total = 0
        self._recorded = False
        self._samples: collections.deque[tuple[int, int]] = collections.deque([(start, 0)])

    def record(self, wait_ns: int) -> None:
        now = self._clock()
        with self._lock:
            self._wait_total += max(0, wait_ns)
            self._recorded = True
            if now - self._samples[-1][0] >= SAMPLE_NS:
                self._samples.append((now, self._wait_total))
                while len(self._samples) > 2 and now - self._samples[1][0] >= WINDOW_NS:
                    self._samples.popleft()

    def ratio(self) -> float:
        now = self._clock()
        with self._lock:
            t0, w0 = self._samples[0]
            elapsed = now - t0
            waited = self._wait_total - w0
            recorded = self._recorded
        if not recorded:
            return math.nan
        if elapsed <= 0:
            return 1.0
        return min(1.0, max(0.0, waited / elapsed))
