"""planewatch_prometheus end to end: a real `planewatch broker` exporter, a target answering garbage and one nobody
listens on, listed in a cluster.json, scraped by the ingest query into the Delta tables; a restart from the checkpoint,
and a kill -9 between logging a batch's offsets and committing it."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from jobs.run.runner import run_pipeline
from jobs.sources.checkpoints import APP_ID_FILE, SCRAPE_SPOOL_DIR
from jobs.sources.prometheus_source import entry_scrapes
from jobs.sources.scrape import ScrapeStore
from tests.jobs.sources.scrape_helpers import answering, broker_process, free_port
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.polling import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
QUERY = "ingest_metrics_prometheus"
# The continuous pipeline that is killed must reach a bronze write within this long (JVM start-up included).
RUN_TIMEOUT_S = 300


def _cluster_json(root: Path, urls: dict[int, str]) -> Path:
    d = root / "prod"
    d.mkdir(parents=True, exist_ok=True)
    doc = {"bootstrap.servers": "127.0.0.1:9092",
           "brokers": [{"id": bid, "prometheus": url} for bid, url in sorted(urls.items())]}
    (d / "cluster.json").write_text(json.dumps(doc, indent=2))
    return d


def _sources(cluster_dir: Path) -> dict[str, Any]:
    """The settings' sources: the Prometheus source over the cluster.json in `cluster_dir`, no files."""
    return {"files": {"enabled": False},
            "prometheus": {"enabled": True, "cluster_json": [str(cluster_dir)], "timeout_s": 5}}


def _logged_offsets(ck: Path) -> dict[int, dict[str, Any]]:
    """batch id -> the source offset Spark logged for it (offsets/<id>: version, metadata, the source's offset)."""
    out = {}
    for f in (ck / QUERY / "offsets").iterdir():
        if f.name.isdigit():
            out[int(f.name)] = json.loads(f.read_text().splitlines()[2])["targets"]
    return out


def _assert_each_logged_scrape_once(lake: Path, ck: Path) -> None:
    """Every scrape a logged batch names is in raw_metrics exactly once: its rows carry that batch id, the logged
    scrape time and stream positions inside the logged range; nothing else is there."""
    raw = lake_rows(lake, "raw_metrics")
    keys = Counter((r["source"], r["source_offset"]) for r in raw)
    assert max(keys.values()) == 1
    logged = _logged_offsets(ck)
    expected_batches = set()
    prev: dict[str, Any] = {}
    for batch in sorted(logged):
        for url, e in logged[batch].items():
            if url in prev and prev[url]["ts"] == e["ts"]:
                continue
            rows = [r for r in raw if r["source"] == url and r["batch_id"] == batch]
            assert rows, (batch, url)
            assert {round(r["ingest_ts"].timestamp() * 1000) for r in rows} == {ts for ts, _ in entry_scrapes(e)}
            assert all(e["from"] <= r["source_offset"] < e["offset"] for r in rows)
            expected_batches.add((url, batch))
        prev = logged[batch]
    assert {(r["source"], r["batch_id"]) for r in raw} == expected_batches


def _assert_spool_holds_the_last_batch_only(ck: Path) -> None:
    """Committed answers leave the spool; Spark commits a batch to its source only when it plans the next one, so
    after a run the last batch's answers are still there (the next run's first plan clears them)."""
    names = os.listdir(ck / QUERY / SCRAPE_SPOOL_DIR)
    logged = _logged_offsets(ck)
    named = {ScrapeStore._stem(url, ts) for url, e in logged[max(logged)].items() for ts, _ in entry_scrapes(e)}
    assert {n.split(".", 1)[0] for n in names} == named
    assert len(names) == len(named)


def test_scrapes_into_bronze_silver_quarantine_reconcile_and_restart(spark, tmp_path: Path, caplog) -> None:
    down = f"http://127.0.0.1:{free_port()}/metrics"
    with broker_process(tmp_path / "broker") as good, answering() as garbage:
        cluster_dir = _cluster_json(tmp_path / "clusters", {1: good, 2: garbage, 3: down})
        settings = pipeline_settings(tmp_path, sources=_sources(cluster_dir))
        with caplog.at_level(logging.INFO, logger="jobs.ingest.batch"):
            assert run_pipeline(spark, settings, families=("metrics",), detection=False) == 0
        # a scrape batch small by its logged offsets is processed on the driver: the stream Spark handed it, read
        # once (stage `read`)
        (report,) = [r.getMessage() for r in caplog.records if "ingest_metrics_prometheus batch 0:" in r.getMessage()]
        assert "path='driver', stages={'open': " in report  # the tables opened, then the batch read
        assert "'read': " in report
        lake = tmp_path / "lake"
        raw = lake_rows(lake, "raw_metrics")
        assert {r["source"] for r in raw} == {good, garbage, down}
        assert {r["cluster"] for r in raw} == {"prod"}  # the directory holding cluster.json
        scraped = [r for r in raw if r["source"] == good]
        assert {(r["broker_id"], r["metric_format"], r["batch_id"]) for r in scraped} == {(1, "prometheus", 0)}
        assert len({r["ingest_ts"] for r in scraped}) == 1  # one scrape
        assert [r["source_offset"] for r in scraped] == sorted(r["source_offset"] for r in scraped)
        assert min(r["source_offset"] for r in scraped) == 0
        assert any(r["line"].startswith("kafka_network_requestchannel_requestqueuesize ") for r in scraped)
        failed = sorted((r["broker_id"], r["metric_format"], r["line"].split("\n")[0])
                        for r in raw if r["source"] != good)
        assert failed == [
            (2, "source-error", "scrape failed: answer is not Prometheus text (HTTP 200, Content-Type text/html)"),
            (3, "source-error", "scrape failed: connection refused"),
        ]

        samples = lake_rows(lake, "metric_samples")
        queue = [s for s in samples if s["signal"] == "RequestQueueSize"]
        assert [(s["cluster"], s["broker_id"], s["source"], s["ts"]) for s in queue] == [
            ("prod", 1, good, scraped[0]["ingest_ts"])]
        assert {"AcceptorBlockedPercent", "RequestHandlerAvgIdlePercent", "NetworkProcessorAvgIdlePercent"} <= {
            s["signal"] for s in samples}

        quarantine = lake_rows(lake, "quarantine")
        # (besides the failed scrapes, a sample could fail a hard rule; the broker has no control plane, so its
        # ControlPlaneNetworkProcessorAvgIdlePercent is NaN: a recognised sample without a value, unused)
        sourced = [q for q in quarantine if q["stage"] == "source"]
        assert sorted((q["broker_id"], q["reason"], q["source"]) for q in sourced) == [
            (2, failed[0][2], garbage), (3, failed[1][2], down)]
        assert {q["target_table"] for q in quarantine} == {"metric_samples"}
        assert {q["source"] for q in quarantine if q["stage"] != "source"} <= {good}

        unused = sum(1 for r in scraped if r["line"].startswith("#") or r["line"].split()[-1] == "NaN")
        assert len(raw) == len(samples) + len(quarantine) + unused
        recon = [d for d in lake_rows(lake, "dq_results") if d["suite"] == "reconciliation"]
        assert [(d["table_name"], d["batch_id"], d["success"], d["element_count"], d["unexpected_count"])
                for d in recon] == [("raw_metrics", 0, True, len(raw), 0)]

        # restart from the checkpoint: one new scrape per target, the committed one is neither lost nor doubled
        assert run_pipeline(spark, settings, families=("metrics",), detection=False) == 0
        raw2 = lake_rows(lake, "raw_metrics")
        assert sorted(map(str, (r for r in raw2 if r["batch_id"] == 0))) == sorted(map(str, raw))
        assert {r["batch_id"] for r in raw2} == {0, 1}
        for url in (good, garbage, down):
            assert len({r["ingest_ts"] for r in raw2 if r["source"] == url}) == 2
        second = [r for r in raw2 if r["source"] == good and r["batch_id"] == 1]
        assert min(r["source_offset"] for r in second) > max(r["source_offset"] for r in scraped)
        assert len([q for q in lake_rows(lake, "quarantine") if q["stage"] == "source"]) == 4
        assert sorted((d["batch_id"], d["success"]) for d in lake_rows(lake, "dq_results")
                      if d["suite"] == "reconciliation") == [(0, True), (1, True)]
        _assert_each_logged_scrape_once(lake, tmp_path / "ck")
        # the spool keeps the last batch's answers only (Spark commits a batch to its source when it plans the next)
        _assert_spool_holds_the_last_batch_only(tmp_path / "ck")


def _pending(lake: Path) -> bool:
    d = lake / "raw_metrics" / "_pending"
    return d.is_dir() and any(d.iterdir())


def test_kill_9_between_offsets_and_commit_replays_the_logged_scrapes(spark, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}/metrics"
    lake, ck = tmp_path / "lake", tmp_path / "ck"
    with broker_process(tmp_path / "broker") as good, answering() as garbage:
        cluster_dir = _cluster_json(tmp_path / "clusters", {1: good, 2: garbage, 3: down})
        cfg = tmp_path / "pipeline.yaml"
        cfg.write_text(
            "trigger:\n  interval: 1 second\n"
            f"sources:\n  files:\n    enabled: false\n  prometheus:\n    enabled: true\n"
            f"    cluster_json: [{cluster_dir}]\n"
            "quality:\n  enabled: false\n"
            "sink:\n  driver_batch_max_rows: 0\n"  # the executor path: bronze is written through a pending dir
        )
        cmd = [sys.executable, "-m", "planewatch.cli", "pipeline", "--no-detect", "--config", str(cfg),
               "--lake", str(lake), "--checkpoints", str(ck)]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip

        def writing_bronze() -> bool:
            # a bronze write in progress: its batch's offsets are logged, its commit is not
            if _pending(lake):
                return True
            assert proc.poll() is None, "the pipeline exited"
            return False

        try:
            wait_until(writing_bronze, RUN_TIMEOUT_S, "a bronze write in progress")
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        logged = _logged_offsets(ck)
        last = max(logged)
        assert not (ck / QUERY / "commits" / str(last)).exists()
        spool = {n.split(".", 1)[0] for n in os.listdir(ck / QUERY / SCRAPE_SPOOL_DIR)}
        before = logged.get(last - 1, {})
        named = {ScrapeStore._stem(url, ts) for url, e in logged[last].items()
                 if url not in before or before[url]["ts"] != e["ts"] for ts, _ in entry_scrapes(e)}
        assert len(named) >= 3, (last, logged)
        assert named <= spool  # the killed batch's answers wait for its replay (with any scraped ahead since)
        run_id = (ck / QUERY / APP_ID_FILE).read_text().strip()
        bronze = DeltaTable(str(lake / "raw_metrics")).transaction_version(f"{QUERY}.{run_id}:raw")
        assert bronze is None or bronze < last  # so the replay writes the killed batch to bronze, from the spool

        settings = pipeline_settings(tmp_path, sources=_sources(cluster_dir), quality={"enabled": False},
                                     sink={"driver_batch_max_rows": 0})
        assert run_pipeline(spark, settings, families=("metrics",), detection=False) == 0
        assert max(_logged_offsets(ck)) == last + 1  # the replayed batch, then one new scrape (--once)
        _assert_each_logged_scrape_once(lake, ck)
        quarantine = [q for q in lake_rows(lake, "quarantine") if q["stage"] == "source"]
        assert not [q for q in quarantine if q["reason"].startswith("scrape lost")]
        per_batch = Counter(q["batch_id"] for q in quarantine)
        # one row per scrape of the garbage and the down target, every batch (a batch planned while the scraper ran
        # ahead holds several scrapes of each)
        offsets, scraped = _logged_offsets(ck), Counter()
        for batch in sorted(offsets):
            for url, e in offsets[batch].items():
                prev = offsets.get(batch - 1, {}).get(url)
                if url != good and (prev is None or prev["ts"] != e["ts"]):
                    scraped[batch] += len(entry_scrapes(e))
        assert per_batch == scraped
        assert set(per_batch) == set(range(last + 2))
        _assert_spool_holds_the_last_batch_only(ck)
