"""The reconciliation the parser fuzz tests check on every batch they put through the engine."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from pipelines.parsing.engine import RAW_TABLES, ROUTE_TABLES, EngineResult, run_engine
from pipelines.quality.rules import load_suite

__all__ = ["reconciled"]

_SUITES = {family: {t.name: load_suite(t.name) for t in tables.values()} for family, tables in ROUTE_TABLES.items()}


def reconciled(rows: list[dict[str, Any]], family: str, cluster_tz: str = "UTC") -> EngineResult:
    """Run the engine with the hard quality rules on ``rows`` (each with a distinct ``source_offset``) and check that
    every record landed exactly once: in a silver table, in quarantine with a reason, or unused with a reason; and
    that the counts say so."""
    raw = pa.Table.from_pylist(rows, RAW_TABLES[family].to_arrow())
    out = run_engine(raw, family, cluster_tz=cluster_tz, suites=_SUITES[family])
    assert out.quarantine is not None
    assert out.unused is not None
    landed: list[int] = []
    for table in out.silver.values():
        landed += table.column("source_offset").to_pylist()
    landed += out.quarantine.column("source_offset").to_pylist()
    landed += out.unused.column("source_offset").to_pylist()
    offsets = [r["source_offset"] for r in rows]
    duplicated = {k: n for k, n in Counter(landed).items() if n > 1}
    assert not duplicated, f"records in more than one place: {duplicated}"
    assert sorted(landed) == sorted(offsets), f"records lost: {sorted(set(offsets) - set(landed))}"
    for what, table in (("quarantine", out.quarantine), ("unused", out.unused)):
        reasons = table.column("reason").to_pylist()
        assert all(isinstance(r, str) and r.strip() for r in reasons), f"{what} row without a reason: {reasons}"
    # the counts: parser routes before validation, validation failures moved from silver to quarantine
    counts = out.counts
    assert sum(n for route, n in counts.items() if route != "validate") == len(rows), counts
    for route, table in ROUTE_TABLES[family].items():
        failed = sum(out.failed_rules.get(table.name, {}).values())
        assert out.silver[table.name].num_rows + failed == counts.get(route, 0), (route, counts)
    assert out.quarantine.num_rows == counts.get("rejected", 0) + counts["validate"], counts
    assert out.unused.num_rows == counts.get("unused", 0), counts
    return out
