"""`planewatch parse`: the pipeline's own parsers in batch over files a user has.

JSON lines of parsed events on stdout (the silver tables' field names, plus `table`), rejected records with their
reasons on stderr, and a one-line summary on stderr. The default engine is pure Python (answers in about a second);
`--engine spark` runs the very same parse on Spark's built-in functions (slower to start, same rows).
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
ENGINES = ("python", "spark")
# How much of a rejected record stderr shows.
REJECT_PREVIEW_CHARS = 200


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log or metric files (Kafka's formats)")
    parser.add_argument("--kind", choices=KINDS, default="state-change",
                        help="what the files are: a log kind, or metrics (JSON lines / Prometheus text)")
    parser.add_argument("--engine", choices=ENGINES, default="python", help="python (fast start) or spark")
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
    from pipelines.parsing.records import broker_id_of_path, split_records

    now = dt.datetime.now(dt.UTC)
    rows: list[dict[str, Any]] = []
    for name in files:
        data = Path(name).read_bytes()
        broker = broker_id_of_path(str(Path(name).resolve()))
        is_metrics = kind == InputFamily.METRICS
        ext = METRIC_FILE_EXTENSIONS.get(Path(name).suffix.lower()) if is_metrics else None
        fmt = ext.value if ext is not None else None
        for rec in split_records(data, join_continuations=not is_metrics):
            row: dict[str, Any] = {
                "cluster": cluster, "broker_id": broker, "line": rec.line, "line_bytes": rec.nbytes,
                "source": name, "source_offset": rec.offset, "ingest_ts": now, "batch_id": None, "date": now.date(),
            }
            row["metric_format" if is_metrics else "log_kind"] = fmt if is_metrics else kind
            rows.append(row)
    return rows


def _python(rows: list[dict[str, Any]], metrics: bool, tz: str) -> list[tuple[str, dict[str, Any]]]:
    if metrics:
        from pipelines.parsing.pymetrics import parse_metric

        return [parse_metric(r) for r in rows]
    from pipelines.parsing.pylogs import parse_line

    return [parse_line(r, tz) for r in rows]


def _spark(rows: list[dict[str, Any]], metrics: bool, tz: str) -> list[tuple[str, dict[str, Any]]]:
    import os

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    from pipelines.parsing import parse_log_lines, parse_metric_lines
    from schemas.tables import RAW_LOGS, RAW_METRICS

    existing = SparkSession.getActiveSession()  # e.g. inside a test session: use it, leave it running
    spark = existing or (
        SparkSession.builder.master("local[2]").appName("planewatch-parse").config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate()
    )
    if existing is None:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        table = RAW_METRICS if metrics else RAW_LOGS
        raw = spark.createDataFrame([tuple(r[c] for c in table.names) for r in rows], table.to_spark())
        if metrics:
            pm = parse_metric_lines(raw, persist=True)
            parts = {"sample": pm.samples, "rejected": pm.rejected, "unused": pm.unused}
        else:
            pl = parse_log_lines(raw, tz, persist=True)
            parts = {"state_change": pl.state_change, "request": pl.requests, "rejected": pl.rejected,
                     "unused": pl.unused}
        out: list[tuple[str, dict[str, Any]]] = []
        for route, df in parts.items():
            ts_cols = {f.name for f in df.schema if isinstance(f.dataType, TimestampType)}
            sel = [F.unix_micros(c).alias(c) if c in ts_cols else F.col(c) for c in df.columns]
            for r in df.select(*sel).collect():
                d = r.asDict(recursive=True)
                for c in ts_cols:
                    if d[c] is not None:
                        d[c] = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=d[c])
                out.append((route, d))
        order = {(r["source"], r["source_offset"]): i for i, r in enumerate(rows)}
        out.sort(key=lambda rd: order[(rd[1]["source"], rd[1]["source_offset"])])
        return out
    finally:
        if existing is None:
            spark.stop()


def run(args: argparse.Namespace) -> int:
    files: list[str] = args.files
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"planewatch parse: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    metrics = args.kind == "metrics"
    rows = _raw_rows(files, args.kind, args.cluster)
    try:
        results = _spark(rows, metrics, args.tz) if args.engine == "spark" else _python(rows, metrics, args.tz)
    except Exception as exc:  # a zone name Spark or zoneinfo rejects, a JVM that does not start
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
