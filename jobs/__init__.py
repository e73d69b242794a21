"""The streaming jobs: one Spark Structured Streaming query per input family and source, each micro-batch taking a
record from its reader to its alert. By the stage of a record's way:

* `sources`: the readers Spark streams from (`streams`: the `planewatch_files` and `planewatch_kafka` data sources;
  `file_tail`, `entries`, `paths`, `record_split`, `time_align`: the file source's reader; `kafka_stream`,
  `kafka_records`: Kafka topics; `prometheus_source`, `scrape`, `scrape_pacing`: live exporters), and what a
  query's checkpoint says of its batches (`checkpoints`, `file_accounting`);
* `ingest`: the micro-batch (`batch.IngestBatch`): bronze rows (`bronze`), the parse-and-validate engine into staged
  Parquet files committed per table (`staging`), the batch's quality rows (`quality`); `queries` starts the queries;
* `detect`: what the batch then finds in its rows (`rules`: the log family's pairing and rules, the metric family's
  rollups and rules; `pairing`: the pairing state and clock; `alerts`, `incidents`: the process's one writer of
  alerts and incidents; `roll_inputs`: what ROLL_TOO_FAST reads);
* `run`: the run around them (`settings`, `session`, `jars`, `runner`, `maintenance`, `local_cluster`).

`ingest_logs.py` and `ingest_metrics.py` are the spark-submit entry points. Nothing here transforms data; the
transformations live in pipelines/, Delta I/O in lake/. Import the submodules directly; this package imports nothing
heavy on its own.
"""

from __future__ import annotations

__all__ = ["PipelineIOError", "SourceRefused"]


class PipelineIOError(Exception):
    """Base class of the errors raised by the jobs (bad settings, unreadable inputs, missing jars)."""


class SourceRefused(PipelineIOError):
    """A source refused the pipeline (a wrong password, a certificate not trusted): retrying cannot help, so the run
    stops with the source's address and the client's reason."""
