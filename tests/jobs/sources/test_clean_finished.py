"""sources.files.clean_finished: delete: a finished input file (a scrape answer, a rotated log) is deleted once a
committed batch read it to its end, and nothing else is."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
from jobs.sources.file_tail import delete_read_finished, plan
from tests.lake_helpers import lake_rows, pipeline_settings

SCRAPE = "kafka_network_requestchannel_requestqueuesize {value} {ms}\n"
LINE = ("[2026-11-28 08:00:0{i},000] INFO [Broker id=1] Handling LeaderAndIsr request correlationId {i} from "
        "controller 1 for 1 partitions (state.change.logger)\n")
# A finished file is read to its end once it has not changed for this long (file_tail.FINISHED_SETTLE_S, 2 s):
# planning as of this much later reads it whole.
SETTLED_S = 10.0


def _scrape(root: Path, broker: int, n: int) -> Path:
    path = root / "c1" / f"broker-{broker}" / "metrics" / f"scrape-{n}.prom"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCRAPE.format(value=float(n), ms=1_764_316_800_000 + n * 15_000))
    return path


def test_only_finished_files_read_to_their_end_are_deleted(tmp_path: Path) -> None:
    scrapes = [_scrape(tmp_path, 1, n) for n in range(3)]
    log = tmp_path / "c1" / "broker-1" / "state-change.log"
    log.write_text("".join(LINE.format(i=i) for i in range(3)))
    rotated = tmp_path / "c1" / "broker-1" / "state-change.log.2026-11-28-07"
    rotated.write_text(LINE.format(i=9))
    metrics = plan(str(tmp_path), "metrics", {}, 1 << 30, now=time.time() + SETTLED_S).files
    logs = plan(str(tmp_path), "logs", {}, 1 << 30, now=time.time() + SETTLED_S).files
    scrapes[2].write_text(SCRAPE.format(value=7.0, ms=1) * 2)  # changed since the batch read it: not what was read

    deleted = delete_read_finished("metrics", metrics) + delete_read_finished("logs", logs)

    assert sorted(deleted) == sorted(str(p) for p in (scrapes[0], scrapes[1], rotated))
    assert scrapes[2].exists()  # changed since the batch read it
    assert log.exists()  # a growing log


def test_a_file_the_batch_did_not_read_to_its_end_stays(tmp_path: Path) -> None:
    scrape = _scrape(tmp_path, 1, 0)
    scrape.write_text(scrape.read_text().rstrip("\n"))  # its last line waits for the file to settle
    unsettled = plan(str(tmp_path), "metrics", {}, 1 << 30, now=os.stat(scrape).st_mtime).files
    assert delete_read_finished("metrics", unsettled) == []
    assert scrape.exists()


@pytest.mark.spark
def test_the_pipeline_deletes_the_scrapes_it_committed(spark, tmp_path: Path) -> None:
    """Spark tells the source a batch is committed (DataSourceStreamReader.commit) when it plans a later one: by the
    end of the second run, the first run's files are gone."""
    inp = tmp_path / "input"
    first = [_scrape(inp, 1 + n % 2, n) for n in range(4)]
    settings = pipeline_settings(tmp_path, files=inp, sources={"files": {"clean_finished": "delete"}})
    assert run_pipeline(spark, settings, families=("metrics",), detection=False) == 0
    _scrape(inp, 1, 4)
    assert run_pipeline(spark, settings, families=("metrics",), detection=False) == 0
    assert sorted(r["value"] for r in lake_rows(tmp_path / "lake", "metric_samples")) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [p for p in first if p.exists()] == []
