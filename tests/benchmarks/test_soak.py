"""The soak benchmark's pure parts: the Kafka output it generates (files the file source classifies, lines the
parser reads, one incident, hourly-style rotation) and the first/last-period and slope summary."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest

from benchmarks.soak import batch_seconds, period_size, slope_per_hour, trends
from benchmarks.soak_load import CLUSTER, KafkaOutput, Load
from jobs.sources.paths import describe, is_finished
from pipelines.parsing.engine import route_records
from schemas.tables import RAW_LOGS, RAW_METRICS

# A simulated minute at the default rate per broker (300 lines/s over 30 brokers = 10/s each), 5 brokers; the
# rotation period is 20 s so the run crosses two boundaries; the first incident comes at half of incident_every_s.
BROKERS = 5
LOAD = Load(brokers=BROKERS, lines_per_s=50.0, samples_per_s=80.0 * BROKERS / 30, incident_every_s=40.0,
            rotate_s=20.0, scrape_retention_s=0.0)
SECONDS = 60.0
START = 1_800_000_000.0  # a multiple of 20 s: the rotation periods begin on it
# The incident's Sending line (no chatter round sends 1 partition as leader and none as follower) and its Handling.
_INCIDENT_START = re.compile(r"with 1 become-leader and 0 become-follower|Handling LeaderAndIsr request correlationId "
                             r"\d+ from controller 1 for 1 partitions")
_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, KafkaOutput]:
    root = tmp_path_factory.mktemp("soak-input")
    gen = KafkaOutput(root, LOAD, START)
    for k in range(1, int(SECONDS / 0.25)):  # up to START + 59.75: the third boundary is not reached
        gen.step(START + 0.25 * k)
    gen.close()
    return root, gen


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _routes(lines: list[str], family: str, broker: int) -> list[str]:
    schema = RAW_LOGS if family == "logs" else RAW_METRICS
    kind = {"log_kind": "state-change"} if family == "logs" else {"metric_format": "prometheus"}
    raw = [{"cluster": CLUSTER, "broker_id": broker, **kind, "line": line, "line_bytes": len(line),
            "source": "soak", "source_offset": i, "ingest_ts": None, "batch_id": 1, "date": None}
           for i, line in enumerate(lines)]
    return [route for route, _ in route_records(pa.Table.from_pylist(raw, schema.to_arrow()), family)]


def test_every_file_is_classified_as_the_file_source_reads_it(output: tuple[Path, KafkaOutput]) -> None:
    root, _ = output
    kinds = set()
    for p in _files(root):
        info = describe(str(root), str(p), None, "default")
        assert info is not None, p
        assert info.cluster == CLUSTER
        assert info.broker_id == int(p.relative_to(root).parts[1].removeprefix("broker-"))
        kinds.add(info.kind)
        if ".log." in p.name or p.suffix == ".prom":
            assert is_finished(p.name, info), p
    assert {"state-change", "server", "controller", "prometheus"} <= kinds


def test_rate_rotation_and_order(output: tuple[Path, KafkaOutput]) -> None:
    root, gen = output
    assert gen.rotations == 2  # the boundaries at START + 20 s and START + 40 s
    rotated = sorted(p.name for p in (root / CLUSTER / "broker-2").glob("state-change.log.*"))
    assert len(rotated) == 2
    assert all(re.fullmatch(r"state-change\.log\.\d{4}(-\d\d){5}", n) for n in rotated)
    lines = 0
    for b in range(1, BROKERS + 1):
        for p in sorted((root / CLUSTER / f"broker-{b}").glob("state-change.log*"), key=os.path.getmtime):
            text = p.read_text().splitlines()
            lines += len(text)
            stamps = [m.group(1) for x in text if (m := _TS.match(x))]
            assert len(stamps) == len(text)
            # each file in time order, but for the incident's first two lines: stamped 8 s back when written
            chatter = [t for t, x in zip(stamps, text, strict=True) if not _INCIDENT_START.search(x)]
            assert chatter == sorted(chatter), p
    assert lines == gen.lines
    assert abs(lines - LOAD.lines_per_s * SECONDS) < 0.05 * LOAD.lines_per_s * SECONDS


def test_state_change_lines_parse_and_the_incident_is_there(output: tuple[Path, KafkaOutput]) -> None:
    root, gen = output
    text = "".join(p.read_text() for p in (root / CLUSTER).glob("broker-*/state-change.log*"))
    lines = text.splitlines()
    assert set(_routes(lines, "logs", 1)) == {"state_change"}
    assert gen.injected == 1
    inc = gen.incidents.get_nowait()
    finished = [x for x in lines if "Finished LeaderAndIsr request in 8000ms" in x]
    assert len(finished) == 1
    assert f"[Broker id={inc.broker}]" in finished[0]
    assert f"correlationId {inc.correlation_id} " in finished[0]
    # the broker's next line after the incident's Handling is its Finished: no chatter while it is in flight
    own = (root / CLUSTER / f"broker-{inc.broker}").glob("state-change.log*")
    mine = sorted(x for p in own for x in p.read_text().splitlines() if f"[Broker id={inc.broker}]" in x)
    i = next(k for k, x in enumerate(mine) if f"Handling LeaderAndIsr request correlationId {inc.correlation_id} " in x)
    assert "in 8000ms" in mine[i + 1]
    assert dt.datetime.strptime(mine[i][1:24], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp() \
        == pytest.approx(inc.sent_at + 0.01, abs=0.002)


def test_scrapes_have_the_configured_samples(output: tuple[Path, KafkaOutput]) -> None:
    root, gen = output
    scrapes = sorted((root / CLUSTER / "broker-3" / "metrics").glob("scrape-*.prom"))
    assert len(scrapes) == SECONDS // LOAD.scrape_interval_s
    lines = [x for x in scrapes[-1].read_text().splitlines() if not x.startswith("#")]
    assert len(lines) == LOAD.samples_per_scrape
    assert set(_routes(lines, "metrics", 3)) == {"sample"}
    assert gen.samples == LOAD.samples_per_scrape * len(list(root.rglob("scrape-*.prom")))
    assert not list(root.rglob(".*"))  # no temp file left


def test_period_and_slope() -> None:
    assert period_size(5) == 3
    assert period_size(120) == 12
    assert slope_per_hour([0, 1800, 3600], [10, 11, 12]) == pytest.approx(2.0)
    assert slope_per_hour([0], [1]) is None
    samples = [{"t": 60.0 * i, "measures": {"flat.rss_mb": 100.0 + (i % 2), "files.count": 10.0 + 5 * i,
                                            "table.x.version": float(i), "ck.files": float(min(i, 10) * 10)}}
               for i in range(30)]
    rows = {r.measure: r for r in trends(samples)}
    flat, grow, version = rows["flat.rss_mb"], rows["files.count"], rows["table.x.version"]
    assert flat.first == pytest.approx(100.33, abs=0.01)
    assert not flat.grows
    assert grow.grows
    assert not grow.expected
    assert grow.first == pytest.approx(15.0)
    assert grow.last == pytest.approx(150.0)
    assert grow.ratio == 10.0
    assert grow.slope_per_h == pytest.approx(300.0)
    assert version.grows
    assert not rows["ck.files"].grows  # grew, then levelled off: its second half is flat
    assert rows["ck.files"].slope_last_half_per_h == 0
    assert version.expected


def test_batch_seconds_from_the_pipeline_log() -> None:
    lines = [
        "2026-11-28 01:00:00,000 INFO jobs.ingest.batch: ingest_logs_files batch 7: BatchReport(batch_id=7, raw=10, "
        "silver={'state_change_events': 10}, quarantine=0, unused=0, seconds=1.25, path='driver', stages={})",
        "2026-11-28 01:00:01,000 INFO jobs.detect.rules: ingest_logs_files batch 7: pairing 4 request row(s) {'pair': "
        "0.1}, log rules 0 candidate(s), 0 alert row(s); pairing 500 ms, rules 20 ms, alerts 150 ms",
        "2026-11-28 01:00:02,000 WARNING jobs.run.runner: something else",
    ]
    assert batch_seconds(lines) == {"ingest_logs_files": [1.25], "ingest_logs_files.pairing": [0.5]}
