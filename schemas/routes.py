"""The ingest vocabulary: where a family's records go (routes, tables) and why one was quarantined (stages).

The parse-and-validate engine (pipelines.parsing.engine) decides each record's route; the ingest job (jobs/) writes
each route's table. Both read the words from here, so the job's I/O (jobs) needs no pipelines code to know what a
batch writes, and a scrape's reader says "this record is a failed read" in the engine's own words.

* A record of family ``logs`` / ``metrics`` is kept whole in its bronze table (:data:`RAW_TABLES`).
* The engine routes it to exactly one of: a silver route (:data:`ROUTE_TABLES`, the family's main table first),
  :data:`REJECTED` (quarantine: the parser or its source refused it), :data:`UNUSED` (recognised, carries nothing
  planewatch uses: bronze only, counted). A silver row failing a hard quality rule leaves silver for quarantine:
  counted as :data:`VALIDATE` (the stage it failed at).
* A quarantine row's ``stage`` is one of :data:`STAGES`.
"""

from __future__ import annotations

from schemas.tables import (
    METRIC_SAMPLES,
    RAW_LOGS,
    RAW_METRICS,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
    Table,
)

__all__ = [
    "PARSE_STAGE",
    "RAW_TABLES",
    "REJECTED",
    "ROUTE_TABLES",
    "SOURCE_ERROR_FORMAT",
    "SOURCE_STAGE",
    "STAGES",
    "UNUSED",
    "VALIDATE",
]

# Family -> its bronze table (every record of a batch, with its source and offset).
RAW_TABLES: dict[str, Table] = {"logs": RAW_LOGS, "metrics": RAW_METRICS}
# Parser route -> silver table, per family; the first is the family's main table (most of the records).
ROUTE_TABLES: dict[str, dict[str, Table]] = {
    "logs": {"state_change": STATE_CHANGE_EVENTS, "request": REQUEST_EVENTS},
    "metrics": {"sample": METRIC_SAMPLES},
}
REJECTED = "rejected"  # the route of a record the parser (stage parse) or its source (stage source) refused
UNUSED = "unused"  # the route of a recognised record planewatch does not use (kept in bronze, counted)

# Quarantine stages: a line the parser refused; a record standing for a failed read of its source (no line of the
# source was parsed); a parsed row that failed a hard quality rule (also the engine's count of such rows).
PARSE_STAGE = "parse"
SOURCE_STAGE = "source"
VALIDATE = "validate"
STAGES = (PARSE_STAGE, SOURCE_STAGE, VALIDATE)

# The `metric_format` of a raw record that stands for a failed read of its source (a scrape target that is down,
# answers an HTTP error or no Prometheus text): its `line` starts with the reason, e.g. "scrape failed: connection
# refused", optionally followed by a newline and the head of what came back. The engine quarantines such a record
# whole, with that first line as the reason and stage SOURCE_STAGE.
SOURCE_ERROR_FORMAT = "source-error"
