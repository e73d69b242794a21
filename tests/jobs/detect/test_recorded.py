"""A batch's records in its checkpoint: read back as written; a missing record is none, a damaged one is none and
said so; a damaged record of pending shutdowns is not judged, with the reason logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jobs.detect.recorded import KEEP_BATCHES, BatchRecords
from jobs.detect.roll_judge import PENDING_DIR, RollJudge
from lake.read import LatestTable
from pipelines.detection.config import DetectionConfig
from schemas.tables import STATE_CHANGE_EVENTS


def test_records_read_back_and_the_oldest_go(tmp_path: Path) -> None:
    records = BatchRecords(str(tmp_path / "r"))
    for b in range(KEEP_BATCHES + 3):
        records.write(b, {"b": b})
    assert records.read(KEEP_BATCHES + 2) == {"b": KEEP_BATCHES + 2}
    assert records.read(0) is None
    assert len(list((tmp_path / "r").glob("*.json"))) == KEEP_BATCHES
    assert BatchRecords(None).read(1) is None


def test_a_damaged_record_is_none_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "7.json").write_text('{"cut short')
    with caplog.at_level(logging.WARNING):
        assert BatchRecords(str(tmp_path / "r")).read(7) is None
    assert "the record of batch 7 cannot be read" in caplog.text


def test_damaged_pending_shutdowns_are_not_judged_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    BatchRecords(str(tmp_path / "ck" / PENDING_DIR)).write(3, [{"cluster": "c", "no": "ts"}])
    judge = RollJudge(lambda name: str(tmp_path / "lake" / name), str(tmp_path / "ck"),
                      LatestTable(str(tmp_path / "lake" / STATE_CHANGE_EVENTS.name), STATE_CHANGE_EVENTS.to_arrow()),
                      DetectionConfig())
    with caplog.at_level(logging.WARNING):
        assert judge.pending(3).is_empty()
    assert "pending for batch 3 are malformed" in caplog.text
