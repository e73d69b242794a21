"""Roll awareness in the service: the rolls of the lake (stop lines, roll_steps) and the `expected` mark of alerts
(:mod:`pipelines.roll_awareness` judges), and the declarations a rolling script makes (POST /clusters/{c}/rolls).

A declared roll is two roll_steps rows under its roll id: step 1 `plan` (nodes in its detail, `declared: true`),
step 2 `rolled` when the script says it is over; each written exactly once (lake.merge.DeltaMerger's transaction
per roll id and step), so a retried POST adds nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from api.queries import lit_date, lit_ts, name_literal
from api.roll_safety import lake_frame
from api.store import LakeStore
from lake.merge import DeltaMerger
from lake.storage import join
from pipelines.detection.roll_detectors import STOP_EVENTS
from pipelines.roll_awareness import DECLARED_MAX_S, EXPECTED, Declared, Restart, Roll, expectation, find_rolls
from schemas.tables import ROLL_STEPS, STATE_CHANGE_EVENTS

__all__ = ["DECLARED_END_STEP", "DECLARED_PLAN_STEP", "LOOKBACK_S", "annotate", "declare_roll", "end_roll",
           "rolls_since"]

# Stops and roll_steps are read from this long before the earliest alert judged: a roll that covers an alert began
# at most a declaration's lifetime before it (a seen roll reaching further back is cut there: its start moves, its
# pace barely).
LOOKBACK_S = DECLARED_MAX_S
DECLARED_PLAN_STEP = 1
DECLARED_END_STEP = 2
# roll_steps kinds that end a roll
_END_KINDS = ("rolled", "stopped")
_TS = pl.Datetime("us", "UTC")


def _stops_sql(since: dt.datetime, now: dt.datetime, cluster: str | None) -> str:
    events = ", ".join(name_literal(e.value) for e in STOP_EVENTS)
    where = f"\"cluster\" = {name_literal(cluster)} AND " if cluster else ""
    return (f"SELECT \"cluster\", broker_id, ts FROM {STATE_CHANGE_EVENTS.name} WHERE {where}"
            f"date >= {lit_date(since.date())} AND date <= {lit_date(now.date())} AND event IN ({events}) "
            f"AND ts >= {lit_ts(since)} AND ts <= {lit_ts(now)}")


def _steps_sql(since: dt.datetime, now: dt.datetime, cluster: str | None) -> str:
    where = f"\"cluster\" = {name_literal(cluster)} AND " if cluster else ""
    return (f"SELECT roll_id, \"cluster\", kind, node, at, detail FROM {ROLL_STEPS.name} WHERE {where}"
            f"at >= {lit_ts(since)} AND at <= {lit_ts(now)}")


def _declared(steps: pl.DataFrame) -> list[Declared]:
    out: list[Declared] = []
    for (roll_id,), g in steps.sort("at").group_by(["roll_id"], maintain_order=True):
        plan = g.filter(pl.col("kind") == "plan")
        if plan.height == 0:
            continue
        end = g.filter(pl.col("kind").is_in(_END_KINDS))
        restarted = g.filter(pl.col("kind") == "restarted")
        nodes = [int(n) for n in restarted.get_column("node").drop_nulls().to_list()]
        detail = json.loads(plan.item(0, "detail") or "{}")
        nodes += [int(n) for n in detail.get("order") or detail.get("nodes") or []]
        out.append(Declared(str(plan.item(0, "cluster")), str(roll_id), plan.item(0, "at"),
                            end.item(0, "at") if end.height else None,
                            tuple(restarted.get_column("at").to_list()), tuple(nodes)))
    return out


def rolls_since(store: LakeStore, since: dt.datetime, now: dt.datetime, cluster: str | None = None) -> list[Roll]:
    """The rolls of the lake from `since` to `now` (of `cluster`, or of every cluster); tables not written yet
    give none."""
    stops = lake_frame(store, _stops_sql(since, now, cluster), STATE_CHANGE_EVENTS.name,
                       {"cluster": pl.String, "broker_id": pl.Int32, "ts": _TS})
    steps = lake_frame(store, _steps_sql(since, now, cluster), ROLL_STEPS.name,
                       {"roll_id": pl.String, "cluster": pl.String, "kind": pl.String, "node": pl.Int32, "at": _TS,
                        "detail": pl.String})
    restarts = [Restart(r["cluster"], r["broker_id"], r["ts"]) for r in stops.iter_rows(named=True)]
    return find_rolls(restarts, _declared(steps))


def annotate(store: LakeStore, alerts: Sequence[dict[str, Any]], now: dt.datetime) -> list[dict[str, Any]]:
    """`alerts` (alerts-table rows) with `expected` ("rolling restart" or None) and `roll_note` (why a roll does or
    does not explain it; None when no roll covers it)."""
    starts = [a["started_at"] for a in alerts if isinstance(a.get("started_at"), dt.datetime)]
    if not starts:
        return [{**a, "expected": None, "roll_note": None} for a in alerts]
    earliest = min(s if s.tzinfo else s.replace(tzinfo=dt.UTC) for s in starts)
    rolls = rolls_since(store, earliest - dt.timedelta(seconds=LOOKBACK_S), now)
    out = []
    for a in alerts:
        e = expectation(a, rolls, now)
        out.append({**a, "expected": EXPECTED if e and e.expected else None,
                    "roll_note": e.reason if e else None})
    return out


def _writer(lake: str | Path) -> DeltaMerger:
    return DeltaMerger(join(str(lake), ROLL_STEPS.name), ROLL_STEPS, "declared-rolls", ("roll_id", "step"))


def _write(lake: str | Path, roll_id: str, step: int, row: Mapping[str, Any]) -> None:
    full = {"roll_id": roll_id, "step": step, "verdict": None, **row}
    _writer(lake).insert_arrow(pa.Table.from_pylist([full], ROLL_STEPS.to_arrow()), step, app_id=f"roll.{roll_id}")


def declare_roll(lake: str | Path, cluster: str, nodes: Iterable[int], now: dt.datetime,
                 roll_id: str | None = None) -> str:
    """Declare a roll of `cluster` starting `now` (its plan step); returns its roll id (a new one unless given)."""
    roll_id = roll_id or f"declared-{uuid.uuid4().hex[:12]}"
    _write(lake, roll_id, DECLARED_PLAN_STEP, {"cluster": cluster, "kind": "plan", "node": None, "at": now,
                                               "detail": json.dumps({"declared": True, "nodes": sorted(nodes)})})
    return roll_id


def end_roll(lake: str | Path, cluster: str, roll_id: str, now: dt.datetime) -> None:
    """Declare the roll `roll_id` of `cluster` over at `now` (its `rolled` step; once)."""
    _write(lake, roll_id, DECLARED_END_STEP, {"cluster": cluster, "kind": "rolled", "node": None, "at": now,
                                              "detail": json.dumps({"declared": True})})
