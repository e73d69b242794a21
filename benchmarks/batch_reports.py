"""The ingest batches' report lines read back from a pipeline log: one parser for every benchmark that times batches.

jobs.ingest.batch logs each micro-batch as ``<query> batch <id>: BatchReport(batch_id=.., raw=<n>, silver={..},
quarantine=<n>, unused=<n>, seconds=<s>, path='driver', stages={'open': <s>, 'read': <s>, ...})``; :func:`parse`
takes one line (or a log record's message) to a :class:`BatchLine`, :func:`stage_medians` sums a run's up.
"""

from __future__ import annotations

import ast
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["BatchLine", "parse", "parse_all", "stage_medians"]

_LINE = re.compile(r"(?:^|\s)(?P<query>\w+) batch (?P<batch>\d+): BatchReport\((?P<fields>.*)\)\s*$")
_RAW = re.compile(r"\braw=(?P<v>\d+)")
_SECONDS = re.compile(r"\bseconds=(?P<v>[0-9.eE+-]+)")
_PATH = re.compile(r"\bpath='(?P<v>\w*)'")
_STAGES = re.compile(r"\bstages=(?P<v>\{[^}]*\})")


@dataclass(frozen=True)
class BatchLine:
    """One logged batch report: its query, batch id, records read, seconds, where it ran and seconds per stage."""

    query: str
    batch_id: int
    raw: int
    seconds: float
    path: str = ""
    stages: dict[str, float] = field(default_factory=dict)


def parse(line: str) -> BatchLine | None:
    """The batch report in `line`, or None when it holds none."""
    m = _LINE.search(line)
    if m is None:
        return None
    fields = m["fields"]
    raw, seconds = _RAW.search(fields), _SECONDS.search(fields)
    if raw is None or seconds is None:
        return None
    path, stages = _PATH.search(fields), _STAGES.search(fields)
    return BatchLine(m["query"], int(m["batch"]), int(raw["v"]), float(seconds["v"]),
                     path["v"] if path else "", ast.literal_eval(stages["v"]) if stages else {})


def parse_all(lines: Iterable[str]) -> list[BatchLine]:
    """Every batch report of `lines`, in order."""
    return [b for line in lines if (b := parse(line)) is not None]


def stage_medians(batches: Sequence[BatchLine], keep: Callable[[BatchLine], bool] = lambda b: b.raw > 0
                  ) -> dict[str, float]:
    """Over the batches `keep` takes (by default those that read records): how many (`batches`), the median records
    (`records`), batch seconds (`seconds`) and each stage's median seconds (a batch without the stage: 0)."""
    kept = [b for b in batches if keep(b)]
    if not kept:
        return {}
    names = sorted({s for b in kept for s in b.stages})
    out = {"batches": float(len(kept)), "records": statistics.median(b.raw for b in kept),
           "seconds": statistics.median(b.seconds for b in kept)}
    out.update({s: statistics.median(b.stages.get(s, 0.0) for b in kept) for s in names})
    return out
