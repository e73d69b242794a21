"""The demo's shipped shape (planewatch.demo.shipping) and the side-by-side delays of benchmarks.shipped_delays."""

from __future__ import annotations

from pathlib import Path

import yaml

from benchmarks.shipped_delays import pairs, twins
from jobs.run.settings import parse_settings
from planewatch.demo.shipping import LOGS_TOPIC, pipeline_config, run_dir, shipped_name


def test_a_shipped_run_lives_outside_the_file_tree_unless_both_ways_are_asked(tmp_path: Path) -> None:
    assert run_dir(tmp_path, "r", True, "shipped") == tmp_path / "shipped" / "r"
    assert run_dir(tmp_path, "r", True, "both") == tmp_path / "clusters" / "r"
    assert run_dir(tmp_path, "r", False, "shipped") == tmp_path / "clusters" / "r"
    assert (shipped_name("r", "shipped"), shipped_name("r", "both")) == ("r", "r-shipped")


def test_the_pipeline_reads_the_logging_topic_over_the_users_settings(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"trigger": {"interval": "3 seconds"}, "sources": {"kafka": {"reader": "python"}}}))
    raw = pipeline_config(mine, "127.0.0.1:9999")
    settings = parse_settings(raw, "demo")
    k = settings.kafka
    assert (k.enabled, k.bootstrap_servers, k.logs_topics, k.logs_envelope) == (
        True, "127.0.0.1:9999", (LOGS_TOPIC,), "rsyslog")
    assert settings.trigger_interval == "3 seconds"


def test_each_incident_is_paired_with_its_shipped_copy() -> None:
    base = {"event": "broker-killed", "ts_ms": 1, "alert_type": "X", "broker_id": None}
    report = {"incidents": [{**base, "run": "a", "delay_s": 5.0}, {**base, "run": "a-shipped", "delay_s": 6.5},
                            {**base, "run": "b", "delay_s": 3.0}]}
    assert [(r["run"], r["files_s"], r["shipped_s"], r["paired"]) for r in pairs(report)] == [
        ("a", 5.0, 6.5, True), ("b", 3.0, None, False)]


def test_the_same_alert_through_both_ways_is_paired_by_type_broker_and_start() -> None:
    alert = {"type": "X", "broker_id": 2, "visible_ms": 1_000}
    report = {"alerts": [{**alert, "cluster": "a", "seen_ms": 4_000},
                         {**alert, "cluster": "a-shipped", "seen_ms": 5_500},
                         {**alert, "cluster": "a-shipped", "seen_ms": 9_000, "visible_ms": 2_000}]}
    assert twins(report) == [{"run": "a", "type": "X", "broker_id": 2, "files_visible_s": 3.0,
                              "shipped_visible_s": 4.5, "later_s": 1.5}]
