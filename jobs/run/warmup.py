"""Warm the executors' Python workers before the first micro-batch arrives.

A batch processed on the executors runs `run_engine` in Spark's Python workers; a fresh worker imports polars,
pyarrow and the pipelines, and compiles the parsers' pattern tables on its first batch. On the demo's loaded 2-core
machine the first executor batch of a run took 25 s in the engine (4,063 lines) and its pairing step 20 s, against
4-10 s for the next, larger ones: a ROLL_TOO_FAST in it paged 52-60 s after the shutdown. :func:`warm_executors`
runs one task per core through the same path (imports, the engine over one log line and one metric sample) at the
pipeline's start, while the cluster it watches is still starting; Spark reuses its Python workers
(spark.python.worker.reuse, on by default), so the batches find them warm. A warm-up that fails is logged, never
raised: it only saves time.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["WARM_LINE", "warm_executors"]

log = logging.getLogger(__name__)

# One line of each family, parsed as a batch would be: a state-change line (the log engine's layouts and messages)
# and a Prometheus sample (the metric engine's names).
WARM_LINE = ("[2026-01-01 00:00:00,000] INFO [Broker id=1] Transitioning 1 partition(s) to local leaders. "
             "(state.change.logger)")
WARM_SAMPLE = 'kafka_server_replicamanager_underreplicatedpartitions{broker_id="1"} 0.0'


def _raw(family: str) -> pa.Table:
    from jobs.ingest.bronze import arrow_to_raw
    from jobs.sources.kafka_records import raw_kafka_batch

    value = (WARM_LINE if family == "logs" else WARM_SAMPLE).encode()
    batch = raw_kafka_batch([value], [b"broker-1"], ["warmup:0"], [0], family, "warmup", None,
                            dt.datetime.now(dt.UTC))
    return pa.Table.from_batches([arrow_to_raw(batch, family, 0)])


def _warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's work: the engine over one record of each family (imports and pattern tables)."""
    import pipelines.detection.pairing  # noqa: F401 - the pairing step's modules, imported once per worker
    from pipelines.parsing.engine import run_engine

    for _ in batches:
        pass
    t0 = time.perf_counter()
    for family in ("logs", "metrics"):
        run_engine(_raw(family), family)
    yield pa.RecordBatch.from_pydict({"seconds": [time.perf_counter() - t0]})


def warm_executors(spark: SparkSession) -> float | None:
    """Run the warm-up on every core of the session's executors; the seconds it took (None: it failed, logged)."""
    t0 = time.perf_counter()
    try:
        n = max(1, spark.sparkContext.defaultParallelism)
        spark.range(0, n, 1, n).mapInArrow(_warm, "seconds double").collect()
    except Exception:  # only saves time: the batches pay the warm-up themselves if it fails
        log.warning("warming the executors' Python workers failed; the first batches will be slower", exc_info=True)
        return None
    took = time.perf_counter() - t0
    log.info("executors' Python workers warmed on %d core(s) in %.1f s", n, took)
    return took
