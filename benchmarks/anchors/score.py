"""The anchors' detections beside planewatch's, per incident (pure: no processes, no I/O).

An incident is one marker event of a demo run (``broker-killed``, ``storm-started``, ...) with the alert types
planewatch must raise for it (``report.json`` of ``planewatch demo``: one row per expected alert type). For each:

* planewatch's detection: the earliest of those alerts to become readable in GET /alerts, and its delay from the
  marker (the demo's own measure);
* the anchors' detection: the earliest anchor alert on the run's cluster that became readable in Alertmanager's API
  at or after the marker, and its delay from the same marker. A rule that also fired on a run that must stay quiet
  (the healthy runs) detects nothing in particular: it is reported as noise and not counted as a detection;
* the ratio of the two delays (anchor / planewatch), planewatch's floored at RATIO_FLOOR_S (an alert readable
  before the marker, when the condition showed before the scenario marked it, has a delay of 0);
* the window: how long the run's cluster stayed up after the marker (the scenario stops it), i.e. how long the
  anchors could scrape the incident at all. A rule needs its ``for:`` plus up to a scrape and an evaluation
  interval of a condition before it fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SPEED_GOAL", "AnchorAlert", "Row", "noisy_rules", "render", "rows_of"]

# The speed goal: planewatch at least this many times faster than the fastest anchor rule, on every
# incident both catch.
SPEED_GOAL = 5.0
# planewatch's delay in the ratio is at least this: a delay of 0 (the alert was readable before the marker) or of one
# poll would give ratios in the hundreds that say nothing more than "well before".
RATIO_FLOOR_S = 1.0


@dataclass(frozen=True)
class AnchorAlert:
    """An anchor alert as Alertmanager listed it: stack, rule, the run (cluster) its labels name, when Prometheus
    fired it (``startsAt``) and when the benchmark first read it in Alertmanager (ms since the epoch)."""

    stack: str
    rule: str
    run: str | None
    starts_ms: int
    seen_ms: int

    @property
    def name(self) -> str:
        return f"{self.stack}: {self.rule}"


@dataclass(frozen=True)
class Row:
    """One incident with planewatch's and the anchors' detection."""

    run: str
    engine: str
    event: str
    ts_ms: int
    planewatch: str | None  # alert type that caught it first
    planewatch_s: float | None
    anchor: AnchorAlert | None
    anchor_s: float | None
    window_s: float | None = None  # the cluster stayed up this long after the marker

    @property
    def ratio(self) -> float | None:
        """Anchor delay over planewatch delay (how many times faster planewatch was), when both caught it."""
        if self.planewatch_s is None or self.anchor_s is None:
            return None
        return self.anchor_s / max(self.planewatch_s, RATIO_FLOOR_S)


def noisy_rules(alerts: Iterable[AnchorAlert], quiet_runs: Iterable[str]) -> set[str]:
    """Anchor rules (``stack: rule``) that fired on a run where nothing was injected."""
    quiet = set(quiet_runs)
    return {a.name for a in alerts if a.run in quiet}


def rows_of(report: Mapping[str, Any], alerts: Sequence[AnchorAlert], noisy: set[str],
            run_stops: Mapping[str, int] | None = None) -> list[Row]:
    """One row per (run, marker event) of the demo's report, in the report's order; ``run_stops``: when each run's
    cluster stopped (ms), for the window."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for inc in report.get("incidents", []):
        groups.setdefault((inc["run"], inc["event"]), []).append(inc)
    rows = []
    for (run, event), incs in groups.items():
        ts_ms = min(int(i["ts_ms"]) for i in incs)
        caught = sorted((i for i in incs if i.get("alert")), key=lambda i: i["alert"]["seen_ms"])
        first = caught[0] if caught else None
        anchor = min((a for a in alerts if a.run == run and a.seen_ms >= ts_ms and a.name not in noisy),
                     key=lambda a: a.seen_ms, default=None)
        rows.append(Row(run, str(incs[0].get("engine", "reference")), event, ts_ms,
                        first["alert"]["type"] if first else None,
                        max(0.0, (first["alert"]["seen_ms"] - ts_ms) / 1000) if first else None,
                        anchor, (anchor.seen_ms - ts_ms) / 1000 if anchor else None,
                        (stop - ts_ms) / 1000 if (stop := (run_stops or {}).get(run)) is not None else None))
    return rows


def _ratio_text(r: Row) -> str:
    if r.ratio is None:
        return "-"
    return f">={r.ratio:.1f}x" if r.planewatch_s is not None and r.planewatch_s < RATIO_FLOOR_S else f"{r.ratio:.1f}x"


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[c]) for r in (header, *body)) for c in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in (header, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def render(rows: Sequence[Row], alerts: Sequence[AnchorAlert], noisy: set[str],
           run_starts: Mapping[str, int]) -> str:
    """The side-by-side table, the speed goal's verdict, and every anchor alert that fired (noise flagged);
    ``run_starts`` is each run's first timeline event (ms), the origin of the alerts' times."""
    body = [(r.run, r.engine, r.event, f"{r.window_s:.0f}" if r.window_s is not None else "-",
             r.anchor.name if r.anchor else "none", f"{r.anchor_s:.1f}" if r.anchor_s is not None else "-",
             r.planewatch or "NOT DETECTED", f"{r.planewatch_s:.1f}" if r.planewatch_s is not None else "-",
             _ratio_text(r)) for r in rows]
    lines = _table(("run (cluster)", "engine", "incident", "window s", "fastest anchor rule", "anchor s",
                    "planewatch alert", "planewatch s", "anchor/planewatch"), body)
    both = [r for r in rows if r.ratio is not None]
    met = all(r.ratio is not None and r.ratio >= SPEED_GOAL for r in both)
    verdict = (f"on the {len(both)} both caught, planewatch at least {SPEED_GOAL:g}x faster: {'yes' if met else 'NO'}"
               f" (slowest ratio {min(r.ratio for r in both if r.ratio is not None):.1f}x)" if both
               else "no incident was caught by both: the speed ratio has nothing to compare")
    lines += ["", f"{sum(r.anchor is not None for r in rows)} of {len(rows)} incidents caught by an anchor rule, "
                  f"{sum(r.planewatch is not None for r in rows)} by planewatch; {verdict}"]
    lines += ["", "anchor alerts that fired (seconds from the run's first timeline event):"]
    for a in sorted(alerts, key=lambda a: a.seen_ms):
        start = run_starts.get(a.run or "")
        at = f"{(a.seen_ms - start) / 1000:7.1f}" if start is not None else "      ?"
        flag = "  (also fires on a healthy run: noise)" if a.name in noisy else ""
        lines.append(f"  {at}  {a.run or '(no cluster label)'}  {a.name}{flag}")
    if not alerts:
        lines.append("  none")
    return "\n".join(lines)
