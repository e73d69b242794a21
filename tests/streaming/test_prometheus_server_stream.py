"""The metric query over the operator's Prometheus (planewatch_prometheus_server), end to end: a first start reads the
hour Prometheus holds (backfilled, never scraped by planewatch) into raw_metrics, metric_samples and quarantine,
each sample once, counts reconciling; the hour's control-plane backlog is raised as an alert found late; a second
run reads nothing twice."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
from tests.jobs.sources.prometheus_helpers import (
    HISTORY_S,
    UNMAPPED_INSTANCE,
    History,
    backfilled_prometheus,
)
from tests.lake_helpers import lake_rows, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with backfilled_prometheus(tmp_path / "prometheus") as h:
        yield h


def test_a_first_start_reads_the_hour_once_and_raises_its_backlog_found_late(spark, tmp_path: Path,
                                                                             history: History) -> None:
    settings = pipeline_settings(tmp_path, sources={
        "files": {"enabled": False},
        "prometheus_server": {"enabled": True, "url": history.url, "mapping": ["jmx_exporter"],
                              "catch_up": f"{HISTORY_S + 600} seconds"}})
    assert run_pipeline(spark, settings, families=("metrics",)) == 0
    lake = tmp_path / "lake"
    raw = lake_rows(lake, "raw_metrics")
    samples = lake_rows(lake, "metric_samples")
    quarantine = lake_rows(lake, "quarantine")
    # every sample of both brokers once, at the exporter's scrape times
    per_broker = Counter(s["broker_id"] for s in samples)
    assert per_broker == history.per_broker
    assert len({(s["broker_id"], s["signal"], s["ts"]) for s in samples}) == len(samples)
    assert min(s["ts"] for s in samples).timestamp() == history.first_s
    # the unmapped target: one quarantined record per batch, its reason and labels
    sourced = [q for q in quarantine if q["stage"] == "source"]
    assert sourced
    assert all(q["reason"].startswith(
        f"prometheus target not mapped: labels {{instance={UNMAPPED_INSTANCE},job=kafka}}") for q in sourced)
    assert len(raw) == len(samples) + len(quarantine)
    # ... and said in dq_results: one row per batch and kind of source failure, its records counted
    failures = [d for d in lake_rows(lake, "dq_results") if d["suite"] == "source"]
    assert {d["expectation"] for d in failures} == {"prometheus target not mapped"}
    assert sum(d["unexpected_count"] for d in failures) == len(sourced)
    recon = [d for d in lake_rows(lake, "dq_results") if d["suite"] == "reconciliation"]
    assert recon
    assert all(d["success"] for d in recon)
    # the hour's backlog on broker 2, raised now: found late
    (alert,) = [a for a in lake_rows(lake, "alerts") if a["type"] == "CONTROL_PLANE_QUEUE_BACKLOG"]
    assert (alert["cluster"], alert["broker_id"]) == ("prod", 2)
    assert json.loads(alert["evidence"])["found_late_s"] > 600

    # a second run: Prometheus holds nothing new (it scrapes nothing), nothing is read twice
    assert run_pipeline(spark, settings, families=("metrics",)) == 0
    assert len(lake_rows(lake, "metric_samples")) == len(samples)
