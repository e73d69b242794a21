"""Helpers shared by the parser tests: raw rows, expected whole rows, fixture files read as the file source does."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from schemas.tables import QUARANTINE, RAW_LOGS, RAW_METRICS, REQUEST_EVENTS, STATE_CHANGE_EVENTS

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
INGEST = dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC)
RAW_DATE = dt.date(2024, 1, 1)


def load_module(name: str) -> ModuleType:
    """Import a sibling helper module by path (tests/pipelines has no __init__.py)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def raw_log(line: str, offset: int = 0, log_kind: str = "state-change", broker_id: int | None = 9,
            source: str = "fixture") -> dict[str, Any]:
    return {
        "cluster": "c1", "broker_id": broker_id, "log_kind": log_kind, "line": line,
        "line_bytes": len(line.encode("utf-8", "replace")), "source": source, "source_offset": offset,
        "ingest_ts": INGEST, "batch_id": 7, "date": RAW_DATE,
    }


def raw_metric(line: str, offset: int = 0, metric_format: str | None = None, broker_id: int | None = 9,
               source: str = "fixture") -> dict[str, Any]:
    return {
        "cluster": "c1", "broker_id": broker_id, "metric_format": metric_format, "line": line,
        "line_bytes": len(line.encode("utf-8", "replace")), "source": source, "source_offset": offset,
        "ingest_ts": INGEST, "batch_id": 7, "date": RAW_DATE,
    }


def expected_row(route: str, raw: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    """The whole row a case must produce: every column of the route's table (nulls included)."""
    prov = {c: raw[c] for c in ("source", "source_offset", "ingest_ts", "batch_id")}
    if route == "state_change":
        row = dict.fromkeys(STATE_CHANGE_EVENTS.names)
        row.update(cluster="c1", **prov)
        row.update(expect)
        if row["broker_id"] is None:
            row["broker_id"] = raw["broker_id"]
        row["date"] = row["ts"].date()
        return row
    if route == "request":
        row = dict.fromkeys(REQUEST_EVENTS.names)
        row.update(cluster="c1", **prov)
        row.update(expect)
        row["date"] = row["ts"].date()
        return row
    if route == "unused":
        return {**{c: raw[c] for c in RAW_LOGS.names}, **expect}
    assert route == "rejected"
    row = dict.fromkeys(QUARANTINE.names)
    row.update(cluster="c1", broker_id=raw["broker_id"], target_table="state_change_events", stage="parse",
               record=raw["line"][: 64 * 1024], date=raw["date"], **prov)
    row.update(expect)
    return row


def read_fixture_lines(path: Path) -> list[str]:
    """A fixture file's records as the file source delivers them (jobs.sources.file_tail's splitter: continuation lines
    joined to their record with "\\n", blank lines skipped), the provenance header (leading `#` lines of a copied
    sample) left out."""
    from jobs.sources.file_tail import buffer_records

    data = path.read_bytes()
    if path.parent.name == "samples":  # the copied samples open with a provenance block of `#` lines
        lines = data.split(b"\n")
        skip = next((i for i, line in enumerate(lines) if not line.startswith(b"#")), len(lines))
        data = b"\n".join(lines[skip:])
    texts, _, _ = buffer_records(data, 0, "logs" if path.suffix == ".log" else "metrics")
    return texts


def log_fixture_rows() -> list[dict[str, Any]]:
    """Every log record of the copied samples and the contract-check fixture."""
    rows = []
    files = sorted(FIXTURES.glob("samples/*.log")) + sorted(FIXTURES.glob("checks-fixture/**/*.log"))
    for f in files:
        kind = "request" if "request" in f.name else "server" if "server" in f.name else "state-change"
        m = re.search(r"broker-(\d+)", str(f))
        for i, line in enumerate(read_fixture_lines(f)):
            rows.append(raw_log(line, i, kind, int(m.group(1)) if m else None, source=str(f.relative_to(FIXTURES))))
    return rows


def metric_fixture_rows() -> list[dict[str, Any]]:
    rows = []
    for f in sorted(FIXTURES.glob("**/*.prom")) + sorted(FIXTURES.glob("samples/*.txt")) + sorted(
        FIXTURES.glob("**/*.jsonl")
    ):
        fmt = "json" if f.suffix == ".jsonl" else "prometheus"
        for i, line in enumerate(read_fixture_lines(f)):
            rows.append(raw_metric(line, i, fmt, source=str(f.relative_to(FIXTURES))))
    return rows


def parse_all(rows: list[dict[str, Any]], family: str = "logs", cluster_tz: str = "UTC"
              ) -> list[tuple[str, dict[str, Any]]]:
    """The engine's (route, row) of each record, in order (pipelines.parsing.engine.route_records)."""
    import pyarrow as pa

    from pipelines.parsing.engine import route_records

    table = RAW_LOGS if family == "logs" else RAW_METRICS
    return route_records(pa.Table.from_pylist(rows, table.to_arrow()), family, cluster_tz)


def parse_line(raw: dict[str, Any], cluster_tz: str = "UTC") -> tuple[str, dict[str, Any]]:
    """One log record through the engine."""
    return parse_all([raw], "logs", cluster_tz)[0]


def parse_metric(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One metric record through the engine."""
    return parse_all([raw], "metrics")[0]


RAW_LOG_COLUMNS = RAW_LOGS.names
RAW_METRIC_COLUMNS = RAW_METRICS.names
