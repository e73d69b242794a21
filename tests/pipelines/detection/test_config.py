"""DetectionConfig: conf/pipeline.yaml's detection section, per-cluster overrides, clear errors."""

from __future__ import annotations

import pytest
import yaml

from pipelines.detection.config import DEFAULT_THRESHOLDS, DetectionConfig, DetectionConfigError


def test_shipped_yaml_matches_the_defaults(repo_root):
    raw = yaml.safe_load((repo_root / "conf" / "pipeline.yaml").read_text())["detection"]
    cfg = DetectionConfig.from_mapping(raw)
    assert dict(cfg.thresholds) == DEFAULT_THRESHOLDS
    assert cfg == DetectionConfig()


def test_per_cluster_override():
    cfg = DetectionConfig.from_mapping({
        "queued_max_requests": 500,
        "clusters": {"big": {"queued_max_requests": 2000,
                             "thresholds": {"DELAYED_LEADER_AND_ISR": {"warning": 20000}}}},
    })
    big = cfg.for_cluster("big")
    assert big.queued_max_requests == 2000
    assert big.threshold("DELAYED_LEADER_AND_ISR").warning == 20000
    assert big.threshold("DELAYED_LEADER_AND_ISR").critical == 30000
    assert cfg.for_cluster("other").queued_max_requests == 500


def test_severity_directions():
    cfg = DetectionConfig()
    assert cfg.threshold("DELAYED_LEADER_AND_ISR").severity(13973) == "warning"
    assert cfg.threshold("DELAYED_LEADER_AND_ISR").severity(40) is None
    assert cfg.threshold("NETWORK_PROCESSOR_SATURATED").severity(0.05) == "critical"
    assert cfg.threshold("NETWORK_PROCESSOR_SATURATED").severity(0.8) is None


@pytest.mark.parametrize(("raw", "msg"), [
    ({"thresholds": {"NOPE": {"warning": 1}}}, "unknown alert type"),
    ({"thresholds": {"LOCK_CONTENTION": {"warning": "x"}}}, "expected a number"),
    ({"thresholds": {"LOCK_CONTENTION": {"warning": 10, "critical": 5}}}, "must be >="),
    ({"bogus": 1}, "unknown key"),
    ({"resolve_after_s": -1}, ">= 0"),
    ({"clusters": {"a": {"queued_max_requests": "many"}}}, "detection.clusters.a.queued_max_requests"),
])
def test_bad_config_is_a_clear_error(raw, msg):
    with pytest.raises(DetectionConfigError, match=msg):
        DetectionConfig.from_mapping(raw)
