"""`planewatch sql`: DataFusion SQL over the lake's Delta tables by name; only reads run (api.readonly_sql)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

# Rows printed at most (the query itself may aggregate anything; printing millions of rows helps no one).
MAX_ROWS = 100_000
# A wide cell is cut in the table format (JSON/CSV print it whole).
MAX_CELL = 60


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `planewatch sql`."""
    parser.add_argument("query", nargs="?", help='the SQL, e.g. "SELECT type, count(*) FROM alerts GROUP BY type"')
    parser.add_argument("--file", type=Path, help="read the SQL from a file, e.g. api/sql/leader_and_isr_latency.sql")
    parser.add_argument("--lake", default="var/lake",
                        help="lake directory or object store URI (s3://bucket/prefix; default: var/lake)")
    parser.add_argument("--format", choices=["table", "json", "csv"], default="table", help="output format")
    parser.add_argument("--max-rows", type=int, default=10_000, help=f"rows printed at most (<= {MAX_ROWS})")
    parser.epilog = "Tables: every lake table present under --lake, by name (alerts, metric_samples, ...)."


def _cell(v: Any) -> Any:
    if isinstance(v, datetime | date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, bytes):
        return v.hex()
    return v


def _print_table(columns: list[str], rows: list[dict[str, Any]]) -> None:
    cells = [[("" if r[c] is None else str(_cell(r[c])))[:MAX_CELL] for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    print(" | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in cells:
        print(" | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run one query that only reads (see api.readonly_sql); 0 on success, 2 on bad or refused input."""
    if (args.query is None) == (args.file is None):
        print("planewatch sql: give the SQL as an argument or with --file (one of them)", file=sys.stderr)
        return 2
    sql = args.query if args.query is not None else args.file.read_text()
    from api.panels import tables_in
    from api.queries import rows
    from api.readonly_sql import NotReadOnly, SqlError, read_only_session, run_read_only
    from lake.read import open_table
    from lake.storage import join

    if not sql.strip():
        print("planewatch sql: empty query", file=sys.stderr)
        return 2
    tables: dict[str, Any] = {}
    missing: list[str] = []
    for name in tables_in(sql):
        try:
            tables[name] = open_table(join(args.lake, name))
        except Exception:  # TableNotFoundError, a log mid-write: the table cannot be read now
            missing.append(name)
    if missing:
        print(f"planewatch sql: no table {', '.join(missing)} under {args.lake}", file=sys.stderr)
        return 2
    limit = max(0, min(args.max_rows, MAX_ROWS))
    try:
        result, more = run_read_only(read_only_session(tables), sql, limit)
    except NotReadOnly as e:
        print(f"planewatch sql: refused, read-only: {e}; nothing was run", file=sys.stderr)
        return 2
    except SqlError as e:
        print(f"planewatch sql: {e}", file=sys.stderr)
        return 2
    data = rows(result)
    columns = result.column_names
    if args.format == "json":
        for r in data:
            print(json.dumps({k: _cell(v) for k, v in r.items()}, default=str))
    elif args.format == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        for r in data:
            w.writerow(["" if r[c] is None else _cell(r[c]) for c in columns])
    else:
        _print_table(columns, data)
    if more:
        print(f"planewatch sql: printed the first {limit} rows; the query has more (--max-rows)", file=sys.stderr)
    return 0
