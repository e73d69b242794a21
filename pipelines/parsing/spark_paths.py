"""Column helpers for sources: which log a file is, and which broker it belongs to (built-in functions only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.inputs import LOG_FILE_NAMES, LOG_KIND_BY_LOGGER, LogKind

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["BROKER_DIR", "broker_id_from_path", "classify_log_kind"]

BROKER_DIR = r"(?:^|[^A-Za-z0-9])[Bb]roker[-_]?([0-9]+)(?:[^0-9]|$)"


def classify_log_kind(path_col: Column, line_col: Column) -> Column:
    """The log kind from the file name (last path element), else from the logger the line names."""
    from pyspark.sql import functions as F

    name = F.substring_index(F.regexp_replace(path_col, r"\\", "/"), "/", -1)
    out = None
    for kind, rx in LOG_FILE_NAMES:
        cond = name.rlike(rx)
        out = F.when(cond, F.lit(kind.value)) if out is None else out.when(cond, F.lit(kind.value))
    for kind, literal in LOG_KIND_BY_LOGGER:
        cond = F.contains(line_col, F.lit(literal))
        assert out is not None
        out = out.when(cond, F.lit(kind.value))
    assert out is not None
    return out.otherwise(F.lit(LogKind.UNKNOWN.value))


def broker_id_from_path(path_col: Column) -> Column:
    """The innermost `broker-<id>` element of a path as int, null when no element names a broker."""
    from pyspark.sql import functions as F

    parts = F.reverse(F.split(F.regexp_replace(path_col, r"\\", "/"), "/"))
    ids = F.transform(parts, lambda p: F.nullif(F.regexp_extract(p, BROKER_DIR, 1), F.lit("")))
    return F.try_element_at(F.filter(ids, lambda x: x.isNotNull()), F.lit(1)).try_cast("int")
