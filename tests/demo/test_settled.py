"""When the demo takes the pipeline to have read and acted on every line its runs wrote (query_settled), read from a
query's checkpoint as Spark writes it: offsets/<batch> when a batch is planned, commits/<batch> when it is done."""

from __future__ import annotations

import os
from pathlib import Path

from planewatch.demo.processes import query_settled

SINCE = 1_000_000.0  # the moment the last run finished (wall clock)
QUIET_S = 10.0


def _entry(checkpoint: Path, log: str, batch: int, at: float) -> None:
    path = checkpoint / log / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n")
    os.utime(path, (at, at))
    (checkpoint / log / f".{batch}.crc").write_text("")  # Hadoop's checksum beside each entry is no batch


def test_a_query_that_never_planned_a_batch_has_nothing_in_flight(tmp_path: Path) -> None:
    assert query_settled(tmp_path / "q", SINCE, QUIET_S, SINCE + 1)


def test_a_batch_in_flight_is_waited_for_however_long_ago_the_last_commit(tmp_path: Path) -> None:
    _entry(tmp_path, "offsets", 4, SINCE - 100)
    _entry(tmp_path, "commits", 4, SINCE - 99)
    _entry(tmp_path, "offsets", 5, SINCE - 98)
    assert not query_settled(tmp_path, SINCE, QUIET_S, SINCE + 1000)
    _entry(tmp_path, "commits", 5, SINCE + 1001)
    assert query_settled(tmp_path, SINCE, QUIET_S, SINCE + 1001 + QUIET_S)


def test_a_committed_batch_listed_after_the_runs_read_everything_they_wrote(tmp_path: Path) -> None:
    _entry(tmp_path, "commits", 6, SINCE + 0.5)  # Spark lists batch 7's input after this commit
    _entry(tmp_path, "offsets", 7, SINCE + 1)
    _entry(tmp_path, "commits", 7, SINCE + 3)
    assert query_settled(tmp_path, SINCE, QUIET_S, SINCE + 3)


def test_a_batch_whose_listing_began_before_the_runs_ended_is_not_enough(tmp_path: Path) -> None:
    """A loaded machine lists slowly: batch 7's offsets were written after the end, its listing began before."""
    _entry(tmp_path, "commits", 6, SINCE - 0.5)
    _entry(tmp_path, "offsets", 7, SINCE + 1)
    _entry(tmp_path, "commits", 7, SINCE + 3)
    assert not query_settled(tmp_path, SINCE, QUIET_S, SINCE + 3)
    assert query_settled(tmp_path, SINCE, QUIET_S, SINCE + 3 + QUIET_S)


def test_a_first_batch_counts_by_its_own_offsets(tmp_path: Path) -> None:
    _entry(tmp_path, "offsets", 0, SINCE + 1)
    _entry(tmp_path, "commits", 0, SINCE + 3)
    assert query_settled(tmp_path, SINCE, QUIET_S, SINCE + 3)


def test_a_batch_planned_before_the_runs_ended_counts_only_once_the_query_stayed_quiet(tmp_path: Path) -> None:
    _entry(tmp_path, "offsets", 7, SINCE - 2)  # may have missed the last lines: the next trigger reads them
    _entry(tmp_path, "commits", 7, SINCE - 1)
    assert not query_settled(tmp_path, SINCE, QUIET_S, SINCE + 2)
    assert not query_settled(tmp_path, SINCE, QUIET_S, SINCE - 1 + QUIET_S - 0.1)
    assert query_settled(tmp_path, SINCE, QUIET_S, SINCE - 1 + QUIET_S)
