"""`planewatch parse`: the pipeline's own parsers in batch over files a user has.

JSON lines of parsed events on stdout (the silver tables' field names, plus `table`), rejected records with their
reasons on stderr, and a one-line summary on stderr. Files are cut into records by the file source's own splitter
(:func:`jobs.sources.file_tail.buffer_records`) and parsed by the pipeline's engine (:mod:`pipelines.parsing.engine`),
so the rows are the ones the pipeline writes (before the quality rules).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from schemas.inputs import METRIC_FILE_EXTENSIONS, InputFamily, LogKind

# A log kind (any but `unknown`), or metrics.
KINDS = (*(k.value for k in LogKind if k != LogKind.UNKNOWN), InputFamily.METRICS.value)
# Accepted for compatibility: both names run the one engine.
ENGINES = ("python", "spark")
# How much of a rejected record stderr shows.
REJECT_PREVIEW_CHARS = 200


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log or metric files (Kafka's formats)")
    parser.add_argument("--kind", choices=KINDS, default="state-change",
                        help="what the files are: a log kind, or metrics (JSON lines / Prometheus text)")
    parser.add_argument("--engine", choices=ENGINES, default="python",
                        help="kept for compatibility: both run the one engine")
    parser.add_argument("--cluster", default="cli", help="cluster name to put on the rows (default: cli)")
    parser.add_argument("--tz", default="UTC", help="time zone of the log4j timestamps (IANA name, default UTC)")
    parser.add_argument("--unused", action="store_true",
                        help="also report recognised-but-unused lines (with their reason) on stderr")


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN/Infinity: such values are written as strings."""
    return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def _raw_rows(files: list[str], kind: str, cluster: str) -> list[dict[str, Any]]:
    from jobs.sources.file_tail import MAX_LINE_BYTES, buffer_records
    from jobs.sources.paths import broker_id_from_path

    now = dt.datetime.now(dt.UTC)
    rows: list[dict[str, Any]] = []
    is_metrics = kind == InputFamily.METRICS
    for name in files:
        data = Path(name).read_bytes()
        broker = broker_id_from_path(str(Path(name).resolve()))
        ext = METRIC_FILE_EXTENSIONS.get(Path(name).suffix.lower()) if is_metrics else None
        fmt = ext.value if ext is not None else None
        texts, offsets, sizes = buffer_records(data, 0, InputFamily.METRICS.value if is_metrics else "logs")
        for text, offset, size in zip(texts, offsets, sizes, strict=True):
            row: dict[str, Any] = {
                "cluster": cluster, "broker_id": broker, "line": text[:MAX_LINE_BYTES], "line_bytes": size,
                "source": name, "source_offset": offset, "ingest_ts": now, "batch_id": None, "date": now.date(),
            }
            row["metric_format" if is_metrics else "log_kind"] = fmt if is_metrics else kind
            rows.append(row)
    return rows


def _parse(rows: list[dict[str, Any]], metrics: bool, tz: str) -> list[tuple[str, dict[str, Any]]]:
    import pyarrow as pa

    from pipelines.parsing.engine import RAW_TABLES, route_records

    family = "metrics" if metrics else "logs"
    return route_records(pa.Table.from_pylist(rows, RAW_TABLES[family].to_arrow()), family, tz)


def run(args: argparse.Namespace) -> int:
    files: list[str] = args.files
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"planewatch parse: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    metrics = args.kind == "metrics"
    rows = _raw_rows(files, args.kind, args.cluster)
    try:
        results = _parse(rows, metrics, args.tz)
    except Exception as exc:  # a zone name polars rejects
        print(f"planewatch parse: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    tables = {"state_change": "state_change_events", "request": "request_events", "sample": "metric_samples"}
    counts: Counter[str] = Counter()
    out = sys.stdout
    for route, row in results:
        counts[route] += 1
        if route in tables:
            out.write(json.dumps({"table": tables[route], **_clean(row)}, default=_json_default) + "\n")
        elif route == "rejected" or args.unused:
            text = (row.get("record") if route == "rejected" else row.get("line")) or ""
            print(f"{row['source']}:{row['source_offset']}: {route}: {row['reason']}: "
                  f"{text[:REJECT_PREVIEW_CHARS]!r}", file=sys.stderr)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"planewatch parse: {len(rows)} records: {summary or 'none'}", file=sys.stderr)
    return 0
