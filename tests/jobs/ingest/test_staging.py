"""Staging (jobs.ingest.staging) reports the newest event time per cluster of a batch's silver rows, whatever the
engine's timestamp unit: what the pipeline's input lag is measured from (jobs.run.observability). No Spark."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pyarrow as pa

from jobs.ingest.staging import stage_on_driver

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@dataclass
class Processed:
    silver: dict[str, pa.Table]
    quarantine: pa.Table | None = None
    counts: dict[str, int] = field(default_factory=dict)
    failed_rules: dict[str, dict[str, int]] = field(default_factory=dict)


def test_the_newest_event_time_per_cluster_of_the_silver_rows() -> None:
    def process(raw: pa.Table) -> Processed:
        # two silver tables, one in nanoseconds and without a zone: the newest of both, per cluster
        us = pa.table({"cluster": ["c1", "c2", "c1", None],
                       "ts": pa.array([T0, T0 + dt.timedelta(seconds=5), T0 + dt.timedelta(seconds=9), T0],
                                      pa.timestamp("us", "UTC"))})
        ns = pa.table({"cluster": ["c2"], "ts": pa.array([T0.replace(tzinfo=None) + dt.timedelta(seconds=7)],
                                                          pa.timestamp("ns"))})
        return Processed({"state_change_events": us, "request_events": ns}, counts={"state_change": raw.num_rows})

    outcome = stage_on_driver(pa.table({"line": ["a", "b"]}), "logs", process, {})
    assert outcome.newest == {"c1": T0.timestamp() + 9, "c2": T0.timestamp() + 7}
    assert outcome.routes == {"state_change": 2}
