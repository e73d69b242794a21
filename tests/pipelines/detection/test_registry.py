"""The detector registry: one row per alert type, and what is derived from it (ownership, default levels, the runs
of the rules over each input)."""

from __future__ import annotations

import inspect

import polars as pl
import pyarrow as pa

from pipelines.detection.config import DEFAULT_THRESHOLDS, DetectionConfig
from pipelines.detection.registry import (
    DETECTORS,
    DetectorInput,
    latency_candidates,
    log_candidates,
    metric_candidates,
    owned_types,
)
from schemas.alerts import AlertType, DetectQuery
from schemas.tables import CONTROL_REQUEST_LATENCY, STATE_CHANGE_EVENTS

# The detector modules that read each input, and the family that reads it.
_READERS = {
    DetectorInput.METRIC_WINDOWS: ({"metric_detectors", "request_metrics"}, DetectQuery.METRIC),
    DetectorInput.LOG_ROWS: ({"log_detectors", "kraft_detectors"}, DetectQuery.LOG),
    DetectorInput.CONTROL_REQUESTS: ({"latency_detectors"}, DetectQuery.LOG),
    DetectorInput.CONTROLLED_SHUTDOWNS: ({"roll_detectors"}, DetectQuery.LOG),
}


def test_every_alert_type_has_one_row_and_its_levels_are_the_defaults() -> None:
    assert list(DETECTORS) == list(AlertType)
    assert {t: d.threshold for t, d in DETECTORS.items()} == DEFAULT_THRESHOLDS
    assert DetectionConfig().thresholds == DEFAULT_THRESHOLDS


def test_each_type_has_one_writer_and_its_detectors_read_that_writers_input() -> None:
    per_writer = [owned_types(q) for q in DetectQuery]
    assert sorted(t for types in per_writer for t in types) == sorted(t.value for t in AlertType)
    for alert_type, detector in DETECTORS.items():
        modules, family = _READERS[detector.reads]
        assert detector.query == family, alert_type
        assert detector.functions, alert_type
        assert {f.__module__.rsplit(".", 1)[1] for f in detector.functions} <= modules, alert_type


def test_every_detector_but_the_roll_step_takes_its_input_and_the_config() -> None:
    for alert_type, detector in DETECTORS.items():
        if detector.reads == DetectorInput.CONTROLLED_SHUTDOWNS:
            continue
        for detect in detector.functions:
            params = list(inspect.signature(detect).parameters)
            assert params[1:] == ["cfg"], (alert_type, detect.__name__, params)


def test_the_runs_over_empty_inputs_raise_nothing() -> None:
    cfg = DetectionConfig()
    empty_sc = STATE_CHANGE_EVENTS.to_arrow().empty_table()
    assert latency_candidates(CONTROL_REQUEST_LATENCY.to_arrow().empty_table(), empty_sc, cfg) == []
    assert log_candidates(empty_sc, None, cfg) == []
    assert log_candidates(pl.DataFrame(pl.from_arrow(empty_sc)), None, cfg) == []
    assert metric_candidates(pa.table({"cluster": pa.array([], pa.string())}), cfg) == []
