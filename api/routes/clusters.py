"""GET /clusters: every cluster the lake holds input from, what it last sent and when, and its open alerts.

Per cluster and input family (logs, metrics): the newest time a record of it was read and the records kept, from
the bronze tables' file statistics alone (no data read, however long the lake); then one query over each cluster's
newest `date` partition only: the brokers that sent on that day and the records per log kind or metric format. A
cluster whose shipper stopped stays listed with its last time: that is the point of the list.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter

from api.deps import StoreDep, TokenGuard
from api.models import ClusterInputPublic, ClustersPublic, ClusterSummaryPublic
from api.queries import SAFE_NAME, lit_date, name_literal, rows
from api.store import LakeStore, TableUnavailable
from schemas.tables import ALERTS, RAW_LOGS, RAW_METRICS

router = APIRouter(tags=["clusters"], dependencies=[TokenGuard])

__all__ = ["clusters_from_files", "last_day_sql", "router"]

# family -> (bronze table, the column naming a record's kind)
INPUTS = {"logs": (RAW_LOGS.name, "log_kind"), "metrics": (RAW_METRICS.name, "metric_format")}


def clusters_from_files(actions: pa.Table) -> dict[str, dict[str, Any]]:
    """Per cluster of a bronze table's live files (add actions, flattened): the newest read time, the records and the
    newest `date` partition."""
    need = {"partition.cluster", "partition.date", "num_records"}
    if actions.num_rows == 0 or not need <= set(actions.column_names):
        return {}
    aggs: list[tuple[str, str]] = [("num_records", "sum"), ("partition.date", "max")]
    if "max.ingest_ts" in actions.column_names:
        aggs.append(("max.ingest_ts", "max"))
    grouped = actions.group_by("partition.cluster").aggregate(aggs)
    out: dict[str, dict[str, Any]] = {}
    for r in grouped.to_pylist():
        last = r.get("max.ingest_ts_max")
        if isinstance(last, datetime) and last.tzinfo is None:
            last = last.replace(tzinfo=UTC)
        day = r["partition.date_max"]
        out[str(r["partition.cluster"])] = {
            "last_read": last, "records": int(r["num_records_sum"] or 0),
            "last_day": day if isinstance(day, date) else date.fromisoformat(str(day)),
        }
    return out


def last_day_sql(table: str, kind_column: str, last_days: Mapping[str, date]) -> str:
    """DataFusion SQL: per cluster, over its newest date partition only, the records per kind and the brokers."""
    where = " OR ".join(f'("cluster" = {name_literal(c)} AND date = {lit_date(d)})'
                        for c, d in sorted(last_days.items()))
    return (f'SELECT "cluster", {kind_column} AS kind, count(*) AS records, '
            "array_agg(DISTINCT broker_id) AS brokers "
            f'FROM {table} WHERE {where} GROUP BY "cluster", {kind_column}')


def _family(store: LakeStore, table: str, kind_column: str) -> dict[str, ClusterInputPublic]:
    """Each cluster's input of one family (empty when the table holds none)."""
    files = {c: v for c, v in clusters_from_files(store.add_actions(table)).items() if SAFE_NAME.match(c)}
    if not files:
        return {}
    kinds: dict[str, dict[str, int]] = defaultdict(dict)
    brokers: dict[str, set[int]] = defaultdict(set)
    for r in rows(store.query(last_day_sql(table, kind_column, {c: v["last_day"] for c, v in files.items()}),
                              [table])):
        kinds[r["cluster"]][str(r["kind"])] = int(r["records"])
        brokers[r["cluster"]].update(b for b in r["brokers"] or [] if b is not None and b >= 0)
    return {c: ClusterInputPublic(last_read=v["last_read"], records=v["records"], last_day=v["last_day"],
                                  last_day_kinds=kinds[c], last_day_brokers=sorted(brokers[c]))
            for c, v in files.items()}


@router.get("/clusters", response_model=ClustersPublic)
def list_clusters(store: StoreDep) -> ClustersPublic:
    """Every cluster with input in the lake: per family (logs, metrics) when a record was last read, the records
    kept, and on its newest day the brokers that sent and the records per kind; its open alerts by type. A table
    that cannot be read just now is named in `unavailable`."""
    unavailable: list[str] = []
    inputs: dict[str, dict[str, ClusterInputPublic]] = {}
    for family, (table, kind_column) in INPUTS.items():
        try:
            inputs[family] = _family(store, table, kind_column)
        except TableUnavailable:
            unavailable.append(table)
            inputs[family] = {}
    open_types: dict[str, list[str]] = defaultdict(list)
    try:
        alerts = store.snapshot(ALERTS.name)
        opened = alerts.filter(pc.fill_null(pc.equal(alerts["status"], "open"), False))
        for r in opened.select(["cluster", "type"]).to_pylist():
            open_types[r["cluster"]].append(r["type"])
    except TableUnavailable:
        unavailable.append(ALERTS.name)
    names = sorted(set(inputs["logs"]) | set(inputs["metrics"]) | set(open_types))
    data = [ClusterSummaryPublic(cluster=c, logs=inputs["logs"].get(c), metrics=inputs["metrics"].get(c),
                                 open_alerts=len(open_types[c]),
                                 open_alert_types=dict(sorted(_counts(open_types[c]).items())))
            for c in names]
    return ClustersPublic(data=data, count=len(data), unavailable=unavailable)


def _counts(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return out
