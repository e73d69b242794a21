"""conf/pipeline.yaml: validated on load with errors naming the key; flags override the file."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from jobs.run.settings import (
    SettingsError,
    add_arguments,
    load_settings,
    named_path,
    parse_settings,
    split_named_path,
)


def test_the_shipped_config_loads() -> None:
    s = load_settings()
    assert s.sink_mode == "delta-rs"
    assert s.driver_batch_max_rows == 20_000
    assert s.files.max_bytes_per_batch == 64 * 1024 * 1024
    assert s.files.tail_quiet_s == 30.0
    assert parse_settings({"sources": {"files": {"tail_quiet_s": 2.5}}}).files.tail_quiet_s == 2.5
    assert (s.trigger_for("logs"), s.trigger_for("metrics")) == ("2 seconds", "10 seconds")
    assert isinstance(s.detection, dict)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"sources": {"files": {"max_bytes_per_batch": -1}}}, "sources.files.max_bytes_per_batch"),
        ({"sources": {"files": {"tail_quiet_s": 0}}}, "sources.files.tail_quiet_s"),
        ({"sink": {"mode": "parquet"}}, "sink.mode"),
        ({"sink": {"driver_batch_max_rows": -1}}, "sink.driver_batch_max_rows"),
        ({"trigger": {"interval": "soon"}}, "trigger.interval"),
        ({"sources": {"kafka": {"enabled": True}}}, "sources.kafka.logs_topics"),
        ({"sources": {"kafka": {"starting_offsets": "middle"}}}, "sources.kafka.starting_offsets"),
        ({"quality": {"enabled": "yes"}}, "quality.enabled"),
        ({"quality": {"ge_interval_s": -1}}, "quality.ge_interval_s"),
        ({"lakes": "x"}, "unknown keys ['lakes']"),
        ({"sources": {"files": {"pth": "x"}}}, "sources.files: unknown keys ['pth']"),
        ({"cluster": "a b"}, "cluster"),
        ({"detection": [1]}, "detection"),
    ],
)
def test_bad_values_name_the_key(raw: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_settings(raw, "pipeline.yaml")


def test_flags_override_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "p.yaml"
    cfg.write_text("lake: /a\ntrigger:\n  interval: 5 seconds\n")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--config", str(cfg), "--input", str(tmp_path), "--lake", "/b", "--cluster", "prod", "--once",
         "--trigger", "500 milliseconds"]
    )  # fmt: skip
    s = load_settings(args.config, args)
    assert (s.lake, s.cluster, s.once, s.trigger_interval, s.metrics_trigger_interval, s.files.path) == (
        "/b", "prod", True, "500 milliseconds", "500 milliseconds", str(tmp_path)
    )  # fmt: skip
    assert (s.trigger_for("logs"), s.trigger_for("metrics")) == ("500 milliseconds", "500 milliseconds")
    one = load_settings(args.config)  # no metrics_interval: the metric queries follow trigger.interval
    assert (one.trigger_for("logs"), one.trigger_for("metrics")) == ("5 seconds", "5 seconds")
    split = parse_settings({"trigger": {"interval": "1 second", "metrics_interval": "15 seconds"}})
    assert (split.trigger_for("logs"), split.trigger_for("metrics")) == ("1 second", "15 seconds")
    with pytest.raises(SettingsError, match="--input"):
        load_settings(args.config, parser.parse_args(["--input", str(tmp_path / "missing")]))
    bad = tmp_path / "bad.yaml"
    bad.write_text("lake: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        load_settings(bad)


def test_a_scraped_cluster_json_may_name_its_cluster() -> None:
    assert split_named_path(named_path("prod-eu=rel/cluster.json")) == ("prod-eu", os.path.abspath("rel/cluster.json"))
    assert split_named_path(named_path("/a/b=c/cluster.json")) == (None, "/a/b=c/cluster.json")
