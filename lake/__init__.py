"""The lake: every Delta table read, write, commit, merge, Delta log read and maintenance step goes through here.

* `read`: handles (`open_table`, `is_table`), reads in the contract's Arrow types (`LatestTable`, `read_table`,
  `committed_rows`), plain types for answers without a contract; no JVM (the API reads through it).
* `tables`: creating tables and adding declared columns (`ensure_table`), the app transaction every commit carries
  (`batch_commit`), a table's local path.
* `sink`: the exactly-once append of a micro-batch (`DeltaSink`: staged Parquet files or a small Arrow table,
  committed by delta-rs or delta-spark); `stats`: the Parquet footer statistics its add actions carry.
* `merge`: the exactly-once upsert of the gold tables (`DeltaMerger`).
* `writer`: the process's one writer of each table (`TableWriter`: every sink's, merger's and state table's commits
  to it, one at a time, whichever query's app id they carry) and a user's handle on a table (`TableHandle`).
* `log`: the Delta log read by hand (newest version, files some commits added, newest time).
* `spark_read`: Delta tables read by Spark (a snapshot, some files).
* `state`: a stream's keyed state, committed with the micro-batch that made it (`StateTable`).
* `maintenance`: retention, compaction, log cleanup and vacuum of one table.
* `staged`: a batch's files on an object store, written where they stay and committed there (no rename).
* `failpoints`: where a crash test holds a commit (PLANEWATCH_FAILPOINTS; nothing when unset).
* `storage`: where a table lives, a directory or an object store (`s3://`, reached through the environment's
  AWS_* settings), and the file operations the sink and maintenance need on either.

`schemas/` declares the tables; this package does their I/O; jobs/ and api/ use it. Import the submodules
directly (`from lake.sink import DeltaSink`): this package imports nothing heavy on its own.
"""

from __future__ import annotations

__all__ = ["LakeError"]


class LakeError(Exception):
    """A lake operation that cannot be done: not a Delta table, a commit lost or doubled, a partition directory or
    a sink mode that is not understood."""
