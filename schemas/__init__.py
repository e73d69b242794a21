"""Delta table schemas: one owner per table, Spark-free so the API can use them too.

Each table is a `Table` of `Column`s with neutral type names; `to_spark()` and `to_arrow()` build the engine
schemas (pyspark is imported only by `to_spark`). The names here are the contract with users' SQL dashboards and
the REST API: add columns freely, never rename.
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
