"""The metric rules inside the ingest micro-batches (jobs.detect.rules), end to end on the session's Spark.

Apache Kafka 3.9.1's jmx_exporter scrapes of a connection storm (tests/fixtures/kafka/kafka-3.9.1-connection-storm-jmx)
go through the files source a scrape or two per micro-batch, so every 30 s window is built from samples of several
batches (the earlier ones read back from metric_samples). The alert the batches write must be the one the rules give
over all samples at once (tests/pipelines/detection/test_counters.py checks that value against the scrapes), also when
the input arrives across two runs of the job (a restart between them), and a run with nothing new writes nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from jobs.run.runner import run_pipeline
from pipelines.detection.config import DetectionConfig
from pipelines.detection.lifecycle import Candidate, apply_lifecycle
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.registry import metric_candidates
from tests.lake_helpers import lake_rows, lake_table, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

STORM = Path(__file__).resolve().parent.parent / "fixtures" / "kafka" / "kafka-3.9.1-connection-storm-jmx"
# about one scrape (~15 KB of the families planewatch reads) per micro-batch
BATCH_BYTES = 16_384


# the two paths a batch can take (jobs.ingest.batch): each hands the rules the rows its own way, process() on the
# driver or on the executors (delta-spark's committer sits behind the executors' path and commits the same rows:
# tests/streaming/test_sink_modes.py)
SINKS = {"driver": {}, "executors": {"driver_batch_max_rows": 0}}


def _settings(tmp: Path, sink: dict | None = None):
    return pipeline_settings(tmp, files=tmp / "input", max_bytes_per_batch=BATCH_BYTES, sink=sink or {},
                             quality={"sample_limit": 100})


def _run(spark, tmp: Path, sink: dict | None = None) -> None:
    # the ingest job alone, as `spark-submit jobs/ingest_metrics.py` runs it: its batches run the metric rules
    assert run_pipeline(spark, _settings(tmp, sink), families=("metrics",), detection=True) == 0


def _at_once(lake: Path) -> list[dict]:
    """The alert rows the rules and the lifecycle give over every metric_samples row at once."""
    cfg = DetectionConfig()
    samples = lake_table(lake, "metric_samples")
    cands = [Candidate.from_row(c) for c in metric_candidates(metric_windows(samples, cfg), cfg)]
    return apply_lifecycle([], cands, None, dt.timedelta(seconds=cfg.resolve_after_s), dt.datetime.now(dt.UTC))


_SEVERITY = {"warning": 1, "critical": 2}


def _same_as_at_once(lake: Path) -> list[dict]:
    """The alerts the batches wrote are those all samples at once give: the same incidents (type, broker, listener,
    start). A window judged while it was still being filled may have shown a worse value (a 30 s window holding only
    the storm's worst scrape step is 100 % blocked), so an alert's severity, value and last sighting may be worse or
    later, never better or earlier."""
    written = {a["alert_id"]: a for a in lake_rows(lake, "alerts")}
    at_once = {a["alert_id"]: a for a in _at_once(lake)}
    assert sorted((a["type"], a["broker_id"], a["listener"], a["started_at"]) for a in written.values()) == sorted(
        (str(a["type"]), a["broker_id"], a["listener"], a["started_at"]) for a in at_once.values())
    for alert_id, a in written.items():
        b = at_once[alert_id]
        assert _SEVERITY[a["severity"]] >= _SEVERITY[b["severity"]], a
        if a["severity"] == b["severity"]:
            assert abs(a["value"]) >= abs(b["value"]) - 1e-9, (a, b)
        assert a["last_seen_at"] >= b["last_seen_at"], (a, b)
        assert a["threshold"] == b["threshold"]
    return list(written.values())


@pytest.mark.parametrize("path", sorted(SINKS))
def test_batches_raise_the_alert_all_samples_give(spark, tmp_path: Path, path: str, caplog) -> None:
    (tmp_path / "input" / "storm").mkdir(parents=True)
    shutil.copy(STORM / "broker-1.prom", tmp_path / "input" / "storm" / "broker-1.prom")
    with caplog.at_level(logging.INFO, logger="jobs.ingest.batch"):
        _run(spark, tmp_path, SINKS[path])
    taken = {"driver": "driver"}.get(path, "executors")
    assert f"path='{taken}'" in caplog.text
    assert f"path='{'executors' if taken == 'driver' else 'driver'}'" not in caplog.text
    lake = tmp_path / "lake"
    batches = {r["batch_id"] for r in lake_rows(lake, "metric_samples")}
    assert len(batches) >= 10  # the windows really are spread over batches
    written = _same_as_at_once(lake)
    storm = [a for a in written if a["type"] == "ACCEPTOR_BLOCKED"]
    assert [(a["broker_id"], a["listener"], a["severity"]) for a in storm] == [(1, "PLAINTEXT", "critical")]
    version = DeltaTable(str(lake / "alerts")).version()
    _run(spark, tmp_path, SINKS[path])  # nothing new: no batch, no alert write
    assert DeltaTable(str(lake / "alerts")).version() == version


def test_windows_spanning_a_restart_read_the_earlier_samples_back(spark, tmp_path: Path) -> None:
    lines = (STORM / "broker-1.prom").read_bytes().splitlines(keepends=True)
    target = tmp_path / "input" / "storm" / "broker-1.prom"
    target.parent.mkdir(parents=True)
    # the first run stops in the middle of the storm
    target.write_bytes(b"".join(lines[: len(lines) * 3 // 5]))
    _run(spark, tmp_path)
    with target.open("ab") as f:
        f.write(b"".join(lines[len(lines) * 3 // 5:]))
    _run(spark, tmp_path)
    written = _same_as_at_once(tmp_path / "lake")
    assert [a["severity"] for a in written if a["type"] == "ACCEPTOR_BLOCKED"] == ["critical"]
