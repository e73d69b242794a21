"""Run the streaming queries of the pipeline in one SparkSession: one query per input family and source, each
micro-batch ingesting, pairing and detecting (jobs.ingest.batch, jobs.detect.rules).

Used by the spark-submit shells (jobs/ingest_logs.py, jobs/ingest_metrics.py: one family each) and `planewatch
pipeline` (both). `--once`: every query runs with availableNow (what is there when it starts), one family after the
other, metrics first: the log family's pairing reads the metric family's latest samples as its brokers' heartbeats,
so a request stuck in the logs' last batch is judged with the samples that followed it. Continuous: all queries
run until one fails or the process is interrupted (SIGINT/SIGTERM stop them cleanly), and the lake's table
maintenance (jobs.run.maintenance: retention, compaction, log cleanup, vacuum) runs beside them.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jobs import SourceRefused
from jobs.run.settings import Settings, add_arguments, load_settings
from jobs.sources.kafka_security import SecretError
from schemas.inputs import InputFamily

# jobs.ingest.queries, jobs.run.maintenance, jobs.run.observability and jobs.run.session are imported in the
# functions that use them: every `planewatch` command imports this module while it builds its parser
# (planewatch.demo.plan takes QUERY_RESTART), the API's process too, and they bring in pyspark, pyarrow, deltalake
# and polars: +0.5 s and +110 MB per CLI process (measured).

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["FAMILIES_ALL", "QUERY_RESTART", "main", "query_failure", "run_pipeline"]

log = logging.getLogger(__name__)
FAMILIES_ALL: tuple[str, ...] = tuple(f.value for f in InputFamily)
# --once runs the families in this order: the log family's pairing reads the metric family's samples.
ONCE_ORDER: tuple[str, ...] = (InputFamily.METRICS.value, InputFamily.LOGS.value)
# How often the continuous runner checks its queries for failure.
POLL_S = 1.0
# At a stop, how long the pipeline waits for a maintenance step under way (one delta-rs operation on one table).
MAINTENANCE_STOP_JOIN_S = 60.0
# A failed ingest query is restarted from its checkpoint this many times (safe: the sink is exactly-once). On a
# loaded machine Spark's Python planner worker can miss its 10 s connect-back window; that must not end the run.
MAX_RESTARTS = 3
RESTART_BACKOFF_S = 2.0
# The warning logged when an ingest query failed and is restarted (its family, the error, the restart's number):
# `planewatch demo` reads it back from the pipeline's log to report the failure.
QUERY_RESTART = "ingest %s failed (%s); restart %d from the checkpoint"
# A jobs error raised in a Python worker, as Spark's wrapped traceback quotes it (up to Spark's SQLSTATE suffix).
_JOBS_ERROR = re.compile(r"^jobs(?:\.\w+)*\.(\w+): (.+?)(?:\s+SQLSTATE: \w+)*$", re.MULTILINE)
# The jobs' errors that no restart mends (a refused login, a secret that cannot be read): the run stops at once.
_REFUSED = frozenset(c.__name__ for c in (SourceRefused, SecretError))


def query_failure(text: str) -> str:
    """What a failed query's error says in one line: the jobs' own error raised in a Python worker (the last
    `jobs[.<module>].<Error>: message` line of Spark's wrapped traceback), else the text's first line."""
    found = _JOBS_ERROR.findall(text)
    return found[-1][1].strip() if found else (text.strip().splitlines() or [""])[0]


def _failed(q: StreamingQuery, exc: object) -> Exception:
    """The error a failed query raises here: SourceRefused (no restart helps) or a RuntimeError to restart on."""
    text = str(exc)
    found = _JOBS_ERROR.findall(text)
    if found and found[-1][0] in _REFUSED:
        return SourceRefused(query_failure(text))
    return RuntimeError(f"query {q.name} failed: {query_failure(text)}")


def _await_all(queries: Sequence[StreamingQuery]) -> None:
    for q in queries:
        try:
            q.awaitTermination()
        except Exception as exc:  # StreamingQueryException: Spark's text around the worker's traceback
            raise _failed(q, exc) from None
        error = q.exception()
        if error is not None:
            raise _failed(q, error)


def run_pipeline(
    spark: SparkSession, settings: Settings, families: Sequence[str] = FAMILIES_ALL, detection: bool = True,
) -> int:
    """Run the families' queries until done (--once) or stopped; returns a process exit code.

    detection: False = ingestion only (no pairing, no rule runs, no alert is written)."""
    from jobs.ingest.queries import start_ingest_queries  # lazy: pyspark in every CLI process (note at the imports)
    from jobs.run import observability  # lazy: pyarrow in every CLI process (note at the imports)
    from jobs.run.maintenance import (
        Maintainer,  # lazy: pyarrow and deltalake in every CLI process (note at the imports)
    )
    from jobs.run.session import share_object_store_env  # lazy: pyspark in every CLI process
    from lake.storage import check_lake  # lazy: pyarrow in every CLI process

    queries: list[StreamingQuery] = []
    maintainer: Maintainer | None = None
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping the queries", signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):  # as Ctrl-C (KeyboardInterrupt) stops them
            signal.signal(sig, _stop)
    check_lake(settings.lake)  # LakeError: an object store lake that cannot be written, said before any query
    share_object_store_env(spark)  # an object store lake (lake.storage): the executors read its environment too
    try:
        observability.start(settings, families)  # the pipeline's /metrics, when observability.metrics_port is set
        if settings.once:
            # one family at a time (the 2 cores are shared by the queries anyway), metrics first (ONCE_ORDER)
            for family in sorted(families, key=lambda f: ONCE_ORDER.index(f) if f in ONCE_ORDER else len(ONCE_ORDER)):
                for attempt in range(MAX_RESTARTS + 1):
                    started = start_ingest_queries(spark, settings, family, detection)
                    queries += started
                    try:
                        _await_all(started)
                        break
                    except RuntimeError as exc:  # not SourceRefused: that one stops the run
                        if attempt == MAX_RESTARTS:
                            raise
                        log.warning(QUERY_RESTART, family, exc, attempt + 1)
                        _stop_all(started)
                        time.sleep(RESTART_BACKOFF_S * (attempt + 1))
            return 0
        by_family = {family: start_ingest_queries(spark, settings, family, detection) for family in families}
        for started in by_family.values():
            queries += started
        if settings.maintenance.enabled:
            maintainer = Maintainer(settings).start()
        restarts = dict.fromkeys(by_family, 0)
        while not stop.is_set():
            for family, started in by_family.items():
                dead = [q for q in started if not q.isActive]
                if not dead:
                    continue
                failure = _failed(dead[0], dead[0].exception())
                if isinstance(failure, SourceRefused) or restarts[family] >= MAX_RESTARTS:
                    raise failure
                restarts[family] += 1
                log.warning(QUERY_RESTART, family, dead[0].exception(), restarts[family])
                _stop_all(started)
                time.sleep(RESTART_BACKOFF_S * restarts[family])
                by_family[family] = start_ingest_queries(spark, settings, family, detection)
                queries += by_family[family]
            time.sleep(POLL_S)
        return 0
    finally:
        if maintainer is not None:
            maintainer.stop(MAINTENANCE_STOP_JOIN_S)
        _stop_all(queries)
        observability.stop()


def _stop_all(queries: Sequence[StreamingQuery]) -> None:
    for q in queries:
        try:
            if q.isActive:
                q.stop()
        except Exception:  # stopping during a batch logs noise; never mask the real error
            log.debug("stop of %s failed", q.name, exc_info=True)


def main(argv: Sequence[str] | None = None, families: Sequence[str] = FAMILIES_ALL, app: str = "planewatch") -> int:
    """Entry point of the spark-submit shells: parse flags, load settings, build the session, run."""
    from jobs.run.session import build_session  # lazy: pyspark in every CLI process (note at the imports)
    from lake import LakeError  # lazy: as the modules above (note at the imports)

    parser = argparse.ArgumentParser(prog=app, description=__doc__)
    add_arguments(parser)
    parser.add_argument("--no-detect", action="store_true", help="ingestion only (no rule runs, no alert is written)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings(args.config, args)
    spark = build_session(settings, app)
    spark.sparkContext.setLogLevel("WARN")
    try:
        return run_pipeline(spark, settings, families, detection=not args.no_detect)
    except (SourceRefused, LakeError) as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        spark.stop()
