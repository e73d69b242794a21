"""Who reads a micro-batch's records, and where: one table, `READERS[(kind, placement)]`, each entry one reader that
stages the batch's rows through the engine into its tables' pending files (jobs.ingest.staging).

The batch's kind (`BatchKind`) says what holds its records, decided before anything is read:

* `replay`: the crashed attempt of this batch committed its bronze rows: they are read back from those files (so its
  silver rows keep bronze's `ingest_ts`), not from the source again;
* `files`: a file batch whose pieces (byte ranges of its files) the query's offset log names;
* `scrapes`: a scrape batch whose answers the query's spool still holds;
* `stream`: anything else (a Kafka batch, a scrape batch whose spool moved on): the stream Spark handed the batch.

The placement (`schemas.inputs.Placement`) says where the engine runs: `driver` (this process reads the batch and
stages it: no Spark job but a stream's one collect) or `executors` (one Spark job, a task per core, each reading
its share itself where it can: no record passes through the JVM for a file batch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import pyarrow as pa

from jobs.ingest.bronze import arrow_to_raw, to_raw
from jobs.ingest.staging import (
    FilesOutcome,
    Process,
    read_pieces,
    stage_on_driver,
    stage_on_executors,
    stage_pieces_on_executors,
)
from lake.read import committed_rows
from lake.spark_read import read_files
from schemas.inputs import Placement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from jobs.sources.file_tail import Piece
    from schemas.tables import Table

__all__ = ["READERS", "BatchInput", "BatchKind", "Reader"]


class BatchKind(StrEnum):
    """What holds a batch's records (see the module doc)."""

    REPLAY = "replay"
    FILES = "files"
    SCRAPES = "scrapes"
    STREAM = "stream"


@dataclass
class BatchInput:
    """One batch's records as its reader needs them: the stream Spark handed it, and what its kind found."""

    df: DataFrame
    family: str
    batch_id: int
    raw_table: Table
    raw_path: str
    kind: BatchKind
    bronze_files: Sequence[str] = ()  # replay: the committed bronze files
    pieces: Sequence[Piece] = ()  # files: the pieces the offsets name
    scraped: Sequence[pa.RecordBatch] = ()  # scrapes: the spooled answers
    # called once the driver holds the batch's rows (the report's `read` stage)
    on_read: Callable[[], None] = field(default=lambda: None)


Reader = Callable[[BatchInput, Process, Mapping[str, str]], FilesOutcome]


def _here(rows: pa.Table, batch: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    batch.on_read()
    return stage_on_driver(rows, batch.family, process, pending)


def _replay_here(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    return _here(committed_rows(b.bronze_files, b.raw_table), b, process, pending)


def _files_here(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    rows = pa.Table.from_batches(list(read_pieces(b.pieces, b.family, b.batch_id)), b.raw_table.to_arrow())
    return _here(rows, b, process, pending)


def _scrapes_here(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    rows = pa.Table.from_batches([arrow_to_raw(r, b.family, b.batch_id) for r in b.scraped], b.raw_table.to_arrow())
    return _here(rows, b, process, pending)


def _stream_here(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    return _here(pa.table(to_raw(b.df, b.family, b.batch_id).toArrow()), b, process, pending)


def _replay_on_executors(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    rows = read_files(b.df.sparkSession, b.raw_path, b.raw_table.to_spark(), b.raw_table.partition_by,
                      b.bronze_files)
    return stage_on_executors(rows, b.family, process, pending)


def _files_on_executors(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    return stage_pieces_on_executors(b.df.sparkSession, b.pieces, b.family, process, b.batch_id, pending)


def _stream_on_executors(b: BatchInput, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    return stage_on_executors(to_raw(b.df, b.family, b.batch_id), b.family, process, pending)


# (what holds the batch's records, where the engine runs) -> the one reader of that batch
READERS: dict[tuple[BatchKind, Placement], Reader] = {
    (BatchKind.REPLAY, Placement.DRIVER): _replay_here,
    (BatchKind.REPLAY, Placement.EXECUTORS): _replay_on_executors,
    (BatchKind.FILES, Placement.DRIVER): _files_here,
    (BatchKind.FILES, Placement.EXECUTORS): _files_on_executors,
    (BatchKind.SCRAPES, Placement.DRIVER): _scrapes_here,
    # the tasks read a scrape batch through the stream: its spool is on the driver's disk
    (BatchKind.SCRAPES, Placement.EXECUTORS): _stream_on_executors,
    (BatchKind.STREAM, Placement.DRIVER): _stream_here,
    (BatchKind.STREAM, Placement.EXECUTORS): _stream_on_executors,
}

