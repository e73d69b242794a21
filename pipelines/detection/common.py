"""Shared Column helpers of the detectors: per-cluster thresholds, severity, candidate-row shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = ["CANDIDATE_COLUMNS", "CANDIDATE_DDL", "candidates", "level", "severity"]

CANDIDATE_DDL = (
    "type STRING, severity STRING, cluster STRING, broker_id INT, listener STRING, ts TIMESTAMP, "
    "value DOUBLE, threshold DOUBLE, summary STRING, evidence STRING"
)
CANDIDATE_COLUMNS = [c.split(" ")[0] for c in CANDIDATE_DDL.split(", ")]


def _per_cluster(cfg: DetectionConfig, pick: object) -> Column:
    """A Column worth `pick(cfg_for_cluster)` for each row's cluster (overrides as a CASE over cluster names)."""
    from pyspark.sql import functions as F

    assert callable(pick)
    expr = None
    for name in sorted(cfg.overrides):
        v = F.lit(pick(cfg.for_cluster(name)))
        expr = F.when(F.col("cluster") == name, v) if expr is None else expr.when(F.col("cluster") == name, v)
    default = F.lit(pick(cfg))
    return default if expr is None else expr.otherwise(default)


def level(cfg: DetectionConfig, alert_type: str, which: str) -> Column:
    """The `warning` or `critical` threshold of `alert_type` for each row's cluster."""
    return _per_cluster(cfg, lambda c: float(getattr(c.threshold(alert_type), which)))


def setting(cfg: DetectionConfig, name: str) -> Column:
    """Any scalar DetectionConfig field, per cluster."""
    return _per_cluster(cfg, lambda c: getattr(c, name))


def severity(cfg: DetectionConfig, alert_type: str, value: Column) -> Column:
    """'critical' / 'warning' / NULL for `value` against the rule's per-cluster levels."""
    from pyspark.sql import functions as F

    below = cfg.threshold(alert_type).below
    warn, crit = level(cfg, alert_type, "warning"), level(cfg, alert_type, "critical")
    if below:
        return F.when(value <= crit, "critical").when(value < warn, "warning")
    return F.when(value >= crit, "critical").when(value >= warn, "warning")


def candidates(
    df: DataFrame,
    alert_type: str,
    *,
    sev: Column,
    broker_id: Column,
    listener: Column,
    ts: Column,
    value: Column,
    threshold: Column,
    summary: Column,
    evidence: Column,
) -> DataFrame:
    """Project `df` onto candidate-alert rows (CANDIDATE_DDL) and keep only those with a severity."""
    from pyspark.sql import functions as F

    return df.select(
        F.lit(alert_type).alias("type"),
        sev.alias("severity"),
        F.col("cluster"),
        broker_id.cast("int").alias("broker_id"),
        listener.cast("string").alias("listener"),
        ts.alias("ts"),
        value.cast("double").alias("value"),
        threshold.cast("double").alias("threshold"),
        summary.alias("summary"),
        evidence.alias("evidence"),
    ).where(F.col("severity").isNotNull() & F.col("ts").isNotNull())
