"""I/O shells of the streaming jobs, by the stage of a record's way (docs/architecture.md lists the files a record
crosses):

* read: `sources` (the Spark data sources), `file_tail` (the file reader; `entries`, `paths`, `record_split`, and
  the offsets Spark logged: `checkpoints`), `kafka_stream` / `kafka_records`, `prometheus_source` / `scrape`;
* bronze rows: `bronze`;
* stage and commit: `staging` (the batch's rows through the engine into Parquet files), `delta_sink` (the
  exactly-once commits and merges), `parquet_stats`;
* after the commit: `file_accounting` (what a file batch left out); `delta_read` (Spark's reads of Delta tables);
* the run: `settings`, `session`, `jars`.

Nothing in here transforms data; transformations live in `pipelines/`. Import the submodules directly
(`from lake.sink import DeltaSink`); this package imports nothing heavy on its own.
"""

from __future__ import annotations


class PipelineIOError(Exception):
    """Base class of the errors raised by jobs.io (bad settings, unreadable tables, failed commits)."""
