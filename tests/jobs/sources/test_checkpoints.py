"""A query's checkpoint directory: the run id kept there, and Spark's offset log read back (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.sources.checkpoints import APP_ID_FILE, app_run_id, latest_logged_offset, logged_offset

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})


def _log(ck: Path, batch: int, offset: str) -> None:
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch)).write_text(f"v1\n{META}\n{offset}\n")


def test_a_run_id_is_kept_per_checkpoint(tmp_path: Path) -> None:
    first = app_run_id(str(tmp_path / "a"))
    assert app_run_id(str(tmp_path / "a")) == first == (tmp_path / "a" / APP_ID_FILE).read_text()
    assert app_run_id(str(tmp_path / "b")) != first  # a new checkpoint: a new id, so new Delta app ids


def test_the_offset_log_read_back(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    assert latest_logged_offset(str(ck)) is None  # no checkpoint yet
    _log(ck, 0, '{"files": {}}')
    _log(ck, 1, '{"files": {"1:2": {"offset": 5}}}')
    _log(ck, 2, "not json")
    (ck / "offsets" / ".2.crc").write_text("x")  # Spark's checksum files are not batches
    assert logged_offset(str(ck), 1) == {"files": {"1:2": {"offset": 5}}}
    assert logged_offset(str(ck), 2) is None
    assert logged_offset(str(ck), 3) is None  # not logged
    assert latest_logged_offset(str(ck)) is None  # the newest is unreadable: unknown, not an older one
    _log(ck, 10, '{"partitions": {"t/0": 3}}')  # batch ids sort as numbers
    assert latest_logged_offset(str(ck)) == {"partitions": {"t/0": 3}}
    (ck / "offsets" / "11").write_text(f"v1\n{META}\n{{}}\n{{}}\n")  # two sources: not a planewatch query's
    assert logged_offset(str(ck), 11) is None
