"""One micro-batch of an ingest query, from its source's records to its committed silver rows.

* `queries`: `start_ingest_queries`, one streaming query per input family and source, each with its batch handler;
* `batch`: `IngestBatch`, the foreachBatch function: read once, the engine, staged and committed, detection, dq;
* `readers`: `READERS[(kind, placement)]`, the one reader of a batch: what holds its records (a replay's committed
  bronze files, a file batch's pieces, a scrape batch's spool, the stream) by where the engine runs;
* `bronze`: source records -> the bronze table's rows;
* `staging`: the batch's bronze rows through the engine into every table's Parquet files (on the driver or the
  executors), committed per table by lake.sink;
* `quality`: the batch's quality suites and its dq_results rows.
"""

from __future__ import annotations

__all__: list[str] = []
