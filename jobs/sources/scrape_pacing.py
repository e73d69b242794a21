"""How long each scrape target may take, and when one that does not answer is asked again (pure, no I/O).

A broker's exporter answers in proportion to what it exports: the busiest broker (most partitions, most clients)
answers slowest, and is the one an incident is most likely on. So a target is never punished for being slow:

* its timeout follows its own answers: SLOW_FACTOR times its slowest recent answer, at least the configured
  timeout, at most nearly its interval (a scrape must end before the next one is due);
* a scrape that timed out doubles the target's timeout for the next one (up to that cap) and costs no wait: a
  slow exporter loses one scrape, not a minute of them;
* only a target that did not answer even within the cap (a paused or wedged JVM) is backed off: one interval,
  then two, up to MAX_BACKOFF_S, and asked at once again after any answer. A refused connection (a stopped
  broker) costs nothing to ask again and is not backed off.

Every scrape that timed out is counted per target (`timeouts`), and each failed scrape is also a `source-error`
record in the data (jobs.sources.scrape), so a gap in a broker's samples says why.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["MAX_BACKOFF_S", "RECENT_ANSWERS", "SLOW_FACTOR", "TIMEOUT_CAP_SHARE", "ScrapePacing"]

# A target's timeout is this many times its slowest recent answer: room for a busier moment than the recent ones.
SLOW_FACTOR = 3.0
# The recent answers a target's timeout follows (a few intervals: it adapts within a minute at a 15 s interval).
RECENT_ANSWERS = 5
# A scrape's timeout is at most this share of the interval, so it ends before the target's next scrape is due.
TIMEOUT_CAP_SHARE = 0.9
# The longest wait before an unanswering target is asked again: a JVM paused for seconds is asked within this long
# of its return (the former fixed 30 s back-off, applied to any timeout, left a slow busy broker unscraped for 75-99 s
# during its incident).
MAX_BACKOFF_S = 30.0


@dataclass
class _Target:
    answers: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_ANSWERS))
    timeout_s: float | None = None  # after a timeout: the next scrape's (doubled) timeout
    unanswered: int = 0  # scrapes in a row that timed out at the cap or found nobody
    backoff_until: float = 0.0
    timeouts: int = 0


class ScrapePacing:
    """Per-target timeouts and back-offs (module docstring). Times: `now` in seconds on any one clock."""

    def __init__(self, timeout_s: float, interval_s: float) -> None:
        self.base_s = timeout_s
        self.interval_s = interval_s
        self.cap_s = max(timeout_s, interval_s * TIMEOUT_CAP_SHARE)
        self._targets: dict[str, _Target] = {}

    def _of(self, url: str) -> _Target:
        t = self._targets.get(url)
        if t is None:
            t = self._targets[url] = _Target()
        return t

    def timeout_for(self, url: str) -> float:
        """The timeout of the target's next scrape."""
        t = self._of(url)
        if t.timeout_s is not None:
            return t.timeout_s
        if not t.answers:
            return self.base_s
        return min(self.cap_s, max(self.base_s, SLOW_FACTOR * max(t.answers)))

    def may_ask(self, url: str, now: float) -> bool:
        """Whether the target may be scraped at `now` (not backed off)."""
        return now >= self._of(url).backoff_until

    def answered(self, url: str, took_s: float) -> None:
        """The target answered (any HTTP answer, even an error page) after `took_s`."""
        t = self._of(url)
        t.answers.append(took_s)
        t.timeout_s, t.unanswered, t.backoff_until = None, 0, 0.0

    def timed_out(self, url: str, timeout_s: float, now: float) -> None:
        """A scrape with `timeout_s` timed out at `now`: a longer timeout next, or (at the cap) a back-off."""
        t = self._of(url)
        t.timeouts += 1
        if timeout_s < self.cap_s:
            t.timeout_s = min(self.cap_s, 2 * timeout_s)
            return
        t.timeout_s = self.cap_s
        t.unanswered += 1
        t.backoff_until = now + min(MAX_BACKOFF_S, self.interval_s * t.unanswered)

    def timeouts(self, url: str) -> int:
        """Scrapes of the target that timed out so far."""
        return self._of(url).timeouts

    def forget(self, urls: set[str]) -> None:
        """Drop the targets not in `urls` (no longer listed)."""
        for url in set(self._targets) - urls:
            del self._targets[url]
