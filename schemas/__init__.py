"""The vocabulary: every name the layers share, defined once, and the tables' schemas. No I/O library is imported.

* `tables`: each Delta table a `Table` of `Column`s with neutral type names; `to_spark()` and `to_arrow()` build the
  engine schemas (pyspark is imported only by `to_spark`). These names are the contract with users' SQL dashboards
  and the REST API: add columns freely, never rename;
* `alerts` (alert types, their owners, severities, incident causes), `signals` (metric signals and their MBeans),
  `events` (state-change event names, control requests, latency statuses), `inputs` (input families, log kinds,
  metric formats, source kinds, query names), `routes` (the engine's routes and stages), `dq` (dq_results rows),
  `roll_safety` (the roll-safety verdict's vocabulary).
"""

from __future__ import annotations

from schemas.tables import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    DQ_RESULTS,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    QUARANTINE,
    RAW_LOGS,
    RAW_METRICS,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
    TABLES,
    Column,
    Table,
)

__all__ = [
    "ALERTS",
    "CONTROL_REQUEST_LATENCY",
    "DQ_RESULTS",
    "METRIC_ROLLUPS_1M",
    "METRIC_SAMPLES",
    "QUARANTINE",
    "RAW_LOGS",
    "RAW_METRICS",
    "REQUEST_EVENTS",
    "STATE_CHANGE_EVENTS",
    "TABLES",
    "Column",
    "Table",
]
