"""The byte size of a planewatch_files micro-batch, and its pieces read from Spark's offset log (the driver-path
pre-check and the pieces the tasks read)."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.sources.file_tail import file_batch_bytes, logged_file_pieces


def _entry(frm: int, off: int) -> dict[str, object]:
    return {"path": "/in/c1/broker-1/state-change.log", "from": frm, "offset": off, "size": off, "fp": "64:0",
            "cluster": "c1", "broker_id": 1, "kind": "state-change"}


def test_file_batch_bytes_sums_each_files_range() -> None:
    end = {"files": {"1:2": _entry(100, 350), "1:3": _entry(0, 50), "1:4": _entry(70, 70)}}
    assert file_batch_bytes(end) == 250 + 50
    assert file_batch_bytes({"files": {}}) == 0
    assert file_batch_bytes({"topic/0": 5}) is None  # a Kafka offset: unknown
    assert file_batch_bytes({"files": {"1:2": {"offset": 5}}}) is None


def _batch_bytes(checkpoint: str, batch_id: int) -> int | None:
    pieces = logged_file_pieces(checkpoint, batch_id, "logs")
    return None if pieces is None else sum(p.end - p.start for p in pieces)


def test_logged_file_pieces_read_spark_offset_log(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})
    (offsets / "3").write_text("v1\n" + meta + "\n" + json.dumps({"files": {"1:2": _entry(10, 4010)}}))
    assert _batch_bytes(str(tmp_path), 3) == 4000
    assert _batch_bytes(str(tmp_path), 4) is None  # no such batch
    (offsets / "5").write_text("v1\n" + meta + "\nnot json")
    assert _batch_bytes(str(tmp_path), 5) is None
