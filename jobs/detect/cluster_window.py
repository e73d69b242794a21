"""`ClusterWindow`: rows of a lake table kept per cluster from a time on, between a log query's batches, for reads
by time span (`(cluster, lo, hi)`): the common part of `LatencyHistory` and `RecentLines`.

A cluster's rows are read from the lake the first time a span of it is asked for (from the span's start to the wall
clock plus READ_AHEAD) and then follow what the batches hand over (the subclass's `observe`); the subclass's `_keep`
trims them and says from when they are complete. A span that starts before that, or a cluster with more rows than its
bound (`_kept` gets the bound), is read from the lake each time.
"""

from __future__ import annotations

import datetime as dt
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

__all__ = ["READ_AHEAD", "ClusterWindow", "Span"]

log = logging.getLogger(__name__)

# The first read of a cluster reaches this far past the wall clock (rows of hosts whose clocks run ahead).
READ_AHEAD = dt.timedelta(days=1)
Span = tuple[str, dt.datetime, dt.datetime]
Rows = TypeVar("Rows")


class ClusterWindow(ABC, Generic[Rows]):
    """Per cluster, the rows kept and the time from which they are complete (module docstring)."""

    what = "rows"  # what the rows are, for the log

    def __init__(self) -> None:
        self._rows: dict[str, Rows] = {}  # cluster -> its kept rows
        self._from: dict[str, dt.datetime] = {}  # cluster -> the time its kept rows are complete from
        self._too_many: set[str] = set()  # clusters read from the lake each time

    @abstractmethod
    def _read(self, spans: Sequence[Span]) -> Rows:
        """The lake's rows of `spans`."""

    @abstractmethod
    def _keep(self, cluster: str, rows: Rows) -> None:
        """Keep `rows` as `cluster`'s (trimmed; `_kept` records them)."""

    @abstractmethod
    def _slice(self, rows: Rows, lo: dt.datetime, hi: dt.datetime) -> Rows:
        """The kept `rows` of the span `[lo, hi]`."""

    def _kept(self, cluster: str, rows: Rows, count: int, bound: int, span: dt.timedelta) -> None:
        """Record `rows` (`count` of them) as `cluster`'s, or, over `bound`, read the cluster from the lake from now
        on."""
        if count > bound:
            log.warning("%s of cluster %s: %d in %s, more than %d: read from the lake each time", self.what, cluster,
                        count, span, bound)
            self._too_many.add(cluster)
            self.forget([cluster])
            return
        self._rows[cluster] = rows

    def forget(self, clusters: Iterable[str]) -> None:
        """Drop what is kept of `clusters`."""
        for cluster in clusters:
            self._rows.pop(cluster, None)
            self._from.pop(cluster, None)

    def _spans(self, spans: Sequence[Span]) -> list[Rows]:
        """The rows of each span, kept or read."""
        out = []
        for cluster, lo, hi in spans:
            if cluster in self._too_many or (cluster in self._from and lo < self._from[cluster]):
                out.append(self._read([(cluster, lo, hi)]))
                continue
            if cluster not in self._rows:
                self._from[cluster] = lo
                self._keep(cluster, self._read([(cluster, lo, dt.datetime.now(dt.UTC) + READ_AHEAD)]))
                if cluster not in self._rows or lo < self._from[cluster]:  # too many, or the span older than kept
                    out.append(self._read([(cluster, lo, hi)]))
                    continue
            out.append(self._slice(self._rows[cluster], lo, hi))
        return out
