"""The Prometheus source without Spark: scraping real endpoints on 127.0.0.1 (the reference broker's exporter, a
server answering garbage or errors, ports that refuse or never answer), targets from cluster.json, and the stream
reader's offsets, interval, replay from the spool and commit."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.run.settings import SettingsError, load_settings, parse_settings
from jobs.sources.file_tail import plan, read_piece, split
from jobs.sources.prometheus_source import INTERVAL_SLACK, PlannedScrape, PrometheusStreamReader, read_scrape
from jobs.sources.scrape import ERROR_SAMPLE_BYTES, Target, resolve_targets, scrape
from tests.jobs.sources.scrape_helpers import GARBAGE, answering, free_port, not_http, reference_endpoint, silent
from tests.pipelines.parsing.parse_helpers import parse_metric
from tests.polling import wait_until

RAW_COLUMNS = ("cluster", "broker_id", "kind", "line", "line_bytes", "source_offset", "truncated")


def _rows(batches: Any) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def _as_raw_metric(rec: dict[str, Any]) -> dict[str, Any]:
    """A source record as the bronze row the ingest job makes of it (jobs.ingest.bronze.to_raw)."""
    return {**{k: v for k, v in rec.items() if k not in ("kind", "truncated")}, "metric_format": rec["kind"],
            "batch_id": 0, "date": rec["ingest_ts"].date()}


def test_a_scrape_gives_the_records_of_the_same_answer_as_a_prom_file(tmp_path: Path) -> None:
    with reference_endpoint() as ep:
        got = scrape(ep.url, now_ms=1_700_000_000_000)
    assert got.ok
    assert b"kafka_network_requestchannel_requestqueuesize 3.0\n" in got.data
    landed = tmp_path / "prod" / "broker-1" / "scrape.prom"
    landed.parent.mkdir(parents=True)
    landed.write_bytes(got.data)
    offsets = plan(str(tmp_path), "metrics", {}, 1 << 30)
    from_file = _rows(b for p in split("metrics", {}, offsets.files) for b in read_piece(p))
    from_scrape = _rows([read_scrape(PlannedScrape(ep.url, "prod", 1, 0, got))])
    assert [{c: r[c] for c in RAW_COLUMNS} for r in from_scrape] == [{c: r[c] for c in RAW_COLUMNS} for r in from_file]
    assert {r["source"] for r in from_scrape} == {ep.url}
    assert {r["ingest_ts"] for r in from_scrape} == {got.ts}
    samples = [row for route, row in map(parse_metric, map(_as_raw_metric, from_scrape)) if route == "sample"]
    queue = [r for r in samples if r["signal"] == "RequestQueueSize"]
    assert [(r["cluster"], r["broker_id"], r["value"], r["ts"]) for r in queue] == [("prod", 1, 3.0, got.ts)]


@pytest.mark.parametrize("target", ["refused", "garbage", "http-500", "too-large", "silent", "not-http", "no-url"])
def test_a_failed_scrape_is_one_source_error_record_the_parser_quarantines(target: str) -> None:
    big = b"x 1\n" * 400
    servers = {
        "garbage": lambda: answering(200, GARBAGE),
        "http-500": lambda: answering(500, b"boom"),
        "too-large": lambda: answering(200, big, "text/plain"),
        "silent": silent,
        "not-http": not_http,
    }
    expect = {
        "refused": "scrape failed: connection refused",
        "garbage": "scrape failed: answer is not Prometheus text (HTTP 200, Content-Type text/html)",
        "http-500": "scrape failed: HTTP 500 Internal Server Error",
        "too-large": "scrape failed: answer larger than 1000 bytes (Content-Length 1600)",
        "silent": "scrape failed: timed out after 0.5 s",
        "not-http": "scrape failed: no valid HTTP answer (BadStatusLine)",
        "no-url": "scrape failed: not an http(s) URL: 'ftp://127.0.0.1/metrics'",
    }
    t0 = time.monotonic()
    if target == "refused":
        got = scrape(f"http://127.0.0.1:{free_port()}/metrics", 0.5, 1000, now_ms=5)
    elif target == "no-url":
        got = scrape("ftp://127.0.0.1/metrics", 0.5, 1000, now_ms=5)
    else:
        with servers[target]() as url:
            got = scrape(url, 0.5, 1000, now_ms=5)
    assert time.monotonic() - t0 < 5.0  # the deadline holds (0.5 s; a loaded machine gets slack)
    assert not got.ok
    assert got.ts_ms == 5
    text = got.data.decode()
    reason = text.split("\n", 1)[0]
    assert reason == expect[target]
    if target == "garbage":
        assert text == reason + "\n" + GARBAGE.decode()  # what answered, for the operator
    if target == "http-500":
        assert text == reason + "\nboom"
    rec = _rows([read_scrape(PlannedScrape("http://t/metrics", "prod", 2, 40, got))])
    assert [(r["kind"], r["line"], r["source_offset"], r["broker_id"]) for r in rec] == [
        ("source-error", text, 40, 2)]
    route, row = parse_metric(_as_raw_metric(rec[0]))
    assert (route, row["stage"], row["reason"], row["record"], row["target_table"]) == (
        "rejected", "source", reason, text, "metric_samples")


def test_a_garbage_answer_keeps_only_its_head() -> None:
    with answering(200, b"<p>" * 5000) as url:
        got = scrape(url, 5.0)
    head = got.data.decode().split("\n", 1)[1]
    assert len(head) == ERROR_SAMPLE_BYTES


def _cluster_json(path: Path, brokers: list[dict[str, Any]], controllers: list[dict[str, Any]] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"bootstrap.servers": "127.0.0.1:9092", "brokers": brokers, "controller": {"url": "x"}}
    if controllers is not None:
        doc["controllers"] = controllers
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    return path


def test_targets_from_config_and_cluster_json(tmp_path: Path) -> None:
    cj = _cluster_json(tmp_path / "prod" / "cluster.json", [
        {"id": 1, "prometheus": "http://127.0.0.1:1001/metrics"},
        {"id": 2, "prometheus": None},  # no exporter
        {"id": 3, "prometheus": "http://127.0.0.1:1003/metrics"},
    ], [{"id": 9, "prometheus": "http://127.0.0.1:1009/metrics"}])
    static = [{"url": "http://127.0.0.1:1003/metrics", "cluster": "static", "broker_id": 30},
              {"url": "http://127.0.0.1:2000/metrics"}]
    targets, problems = resolve_targets(static, [{"path": str(cj.parent)}], None, "dflt")
    assert problems == []
    assert targets == [
        Target("http://127.0.0.1:1003/metrics", "static", 30),  # listed first: it wins over cluster.json's
        Target("http://127.0.0.1:2000/metrics", "dflt", None),
        Target("http://127.0.0.1:1001/metrics", "prod", 1),
        Target("http://127.0.0.1:1009/metrics", "prod", 9),
    ]
    named, _ = resolve_targets([], [{"path": str(cj)}], "eu", "dflt")
    assert {t.cluster for t in named} == {"eu"}
    missing, problems = resolve_targets([], [{"path": str(tmp_path / "later" / "cluster.json")}], None, "d")
    assert missing == []
    assert len(problems) == 1
    assert "No such file" in problems[0]


def _reader(spool: Path | None, clock: list[float], **options: str) -> PrometheusStreamReader:
    opts = {"interval": "10", "timeout": "2", **options}
    if spool is not None:
        opts["spooldir"] = str(spool)
    return PrometheusStreamReader(opts, clock=lambda: clock[0])


def _read(reader: PrometheusStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[dict[str, Any]]:
    return _rows(b for p in reader.partitions(start, end) for b in reader.read(p))


def test_reader_offsets_interval_replay_from_the_spool_and_commit(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    down = f"http://127.0.0.1:{free_port()}/metrics"
    with reference_endpoint() as ep:
        cj = _cluster_json(tmp_path / "prod" / "cluster.json", [{"id": 1, "prometheus": ep.url},
                                                                 {"id": 3, "prometheus": down}])
        clock = [1_700_000_000.0]
        reader = _reader(spool, clock, clusterjson=json.dumps([{"path": str(cj)}]))
        start = reader.initialOffset()
        end1 = reader.latestOffset(start, None)
        assert set(end1["targets"]) == {ep.url, down}
        assert end1["targets"][ep.url]["ts"] == 1_700_000_000_000
        assert end1["targets"][ep.url]["from"] == 0
        assert len(reader.store.pending()) == 2  # spooled before the offsets went out
        rows1 = _read(reader, start, end1)
        by_source = {r["source"] for r in rows1}
        assert by_source == {ep.url, down}
        good = [r for r in rows1 if r["source"] == ep.url]
        assert good[-1]["source_offset"] + good[-1]["line_bytes"] + 1 == end1["targets"][ep.url]["offset"]
        assert [r["line"] for r in rows1 if r["source"] == down] == ["scrape failed: connection refused"]

        # a restarted query replays the logged batch: the same answers from the spool, no new scrape
        ep.queue_size[0] = 99.0
        replayed = _read(_reader(spool, clock, clusterjson=json.dumps([{"path": str(cj)}])), start, end1)
        assert replayed == rows1
        # without the spool the answers are gone: recorded as lost, never scraped again nor dropped
        lost = _read(_reader(None, clock, clusterjson=json.dumps([{"path": str(cj)}])), start, end1)
        assert {r["kind"] for r in lost} == {"source-error"}
        assert [r["line"].split(":")[0] for r in lost] == ["scrape lost", "scrape lost"]
        reader.commit(end1)
        assert reader.store.pending() == []

        # before the interval: no scrape, the same offsets (Spark runs no batch)
        clock[0] += 5.0
        assert reader.latestOffset(end1, None) is end1
        # due within the slack: scraped; the stream continues where the last answer ended
        clock[0] += 5.0 - 10 * INTERVAL_SLACK / 2
        end2 = reader.latestOffset(end1, None)
        t2 = end2["targets"][ep.url]
        assert t2["from"] == end1["targets"][ep.url]["offset"]
        assert t2["ts"] == int(clock[0] * 1000)
        rows2 = _read(reader, end1, end2)
        assert min(r["source_offset"] for r in rows2 if r["source"] == ep.url) == t2["from"]
        assert "kafka_network_requestchannel_requestqueuesize 99.0" in [r["line"] for r in rows2]

        # a broker leaves cluster.json: its position is kept (retention), it is not scraped
        _cluster_json(cj, [{"id": 1, "prometheus": ep.url}])
        clock[0] += 10.0
        end3 = reader.latestOffset(end2, None)
        assert end3["targets"][down] == end2["targets"][down]
        assert {r["source"] for r in _read(reader, end2, end3)} == {ep.url}


def _log_offset(checkpoint: Path, batch_id: int, offset: dict[str, Any]) -> None:
    """Spark's offset log entry of a one-source query: a version line, the batch metadata, the source offset."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch_id)).write_text(
        "v1\n" + json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0}) + "\n" + json.dumps(offset))


def test_the_driver_reads_a_logged_batch_from_the_spool_as_the_source_reads_it(tmp_path: Path) -> None:
    """The ingest job's driver path reads a scrape batch from the offset log and the spool (no Spark job): the same
    records, in the same order, as the source's `read`; nothing when an answer is not in the spool."""
    from jobs.sources.checkpoints import SCRAPE_SPOOL_DIR
    from jobs.sources.prometheus_source import logged_scrape_records

    checkpoint = tmp_path / "cp"
    down = f"http://127.0.0.1:{free_port()}/metrics"
    with reference_endpoint() as ep:
        clock = [1_700_000_000.0]
        reader = _reader(checkpoint / SCRAPE_SPOOL_DIR, clock,
                         targets=json.dumps([{"url": ep.url, "cluster": "c", "broker_id": 1},
                                             {"url": down, "cluster": "c", "broker_id": 2}]))
        end0 = reader.latestOffset(reader.initialOffset(), None)
        _log_offset(checkpoint, 0, end0)
        assert _rows(logged_scrape_records(str(checkpoint), 0)) == _read(reader, reader.initialOffset(), end0)
        reader.commit(end0)
        clock[0] += 10.0
        end1 = reader.latestOffset(end0, None)
        _log_offset(checkpoint, 1, end1)
        expected = _read(reader, end0, end1)
        assert len(expected) > 3
        assert {r["source"] for r in expected} == {ep.url, down}
        assert _rows(logged_scrape_records(str(checkpoint), 1)) == expected
        assert logged_scrape_records(str(checkpoint), 2) is None  # not logged
        for name in reader.store.pending():  # the answers are gone: the job reads the batch through Spark instead
            (checkpoint / SCRAPE_SPOOL_DIR / name).unlink()
        assert logged_scrape_records(str(checkpoint), 1) is None


def test_available_now_scrapes_every_target_once(tmp_path: Path) -> None:
    with reference_endpoint() as ep:
        clock = [1_700_000_000.0]
        reader = _reader(tmp_path / "spool", clock, targets=json.dumps([{"url": ep.url, "cluster": "c"}]))
        start = reader.initialOffset()
        first = reader.latestOffset(start, None)
        reader.commit(first)
        reader.prepareForTriggerAvailableNow()
        clock[0] += 1.0  # well inside the interval: --once scrapes anyway
        end = reader.latestOffset(first, None)
        assert end["targets"][ep.url]["ts"] == first["targets"][ep.url]["ts"] + 1000
        clock[0] += 60.0
        assert reader.latestOffset(end, None) == end  # and only once: the query ends after this batch


def test_prometheus_settings(tmp_path: Path) -> None:
    s = parse_settings({"sources": {"prometheus": {
        "enabled": True, "targets": [{"url": "http://127.0.0.1:9404/metrics", "cluster": "prod", "broker_id": 1}],
        "cluster_json": ["var/cluster"], "interval": "15 seconds", "timeout_s": 2}}}, "test")
    p = s.prometheus
    assert (p.enabled, p.cluster_json, p.interval_s, p.timeout_s) == (True, ("var/cluster",), 15.0, 2.0)
    assert [(t.url, t.cluster, t.broker_id) for t in p.targets] == [("http://127.0.0.1:9404/metrics", "prod", 1)]
    assert parse_settings({}, "test").prometheus.enabled is False
    bad = [
        ({"enabled": True}, "sources.prometheus.targets: sources.prometheus is enabled but names no targets"),
        ({"targets": [{"url": "127.0.0.1:9404"}]}, "sources.prometheus.targets[0].url: invalid value"),
        ({"targets": [{"url": "http://h/m", "port": 1}]}, "sources.prometheus.targets[0]: unknown keys ['port']"),
        ({"targets": [{"url": "http://h/m", "broker_id": "one"}]}, "targets[0].broker_id: expected an integer"),
        ({"interval": "soon"}, "sources.prometheus.interval: expected seconds"),
        ({"timeout_s": 0}, "sources.prometheus.timeout_s: expected a positive number"),
    ]
    for raw, msg in bad:
        with pytest.raises(SettingsError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            parse_settings({"sources": {"prometheus": raw}}, "test")
    import argparse

    from jobs.run.settings import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = tmp_path / "p.yaml"
    cfg.write_text("sources:\n  prometheus:\n    cluster_json: [a/cluster.json]\n")
    args = parser.parse_args(["--config", str(cfg), "--scrape", "b", "--scrape", "c/cluster.json"])
    p = load_settings(args.config, args).prometheus
    assert p.enabled
    assert p.cluster_json == ("a/cluster.json", str(Path("b").resolve()), str(Path("c/cluster.json").resolve()))


def test_a_cluster_json_under_the_file_tree_is_named_like_its_logs_and_a_stopped_one_has_no_targets(
        tmp_path: Path) -> None:
    cj = tmp_path / "clusters" / "kafka-run" / "cluster" / "cluster.json"
    cj.parent.mkdir(parents=True)
    node = {"id": 2, "prometheus": "http://127.0.0.1:1/metrics"}
    cj.write_text(json.dumps({"brokers": [node], "running": True}))
    (t,), _ = resolve_targets([], [{"path": str(cj), "root": str(tmp_path / "clusters")}], None, "d")
    assert (t.cluster, t.broker_id) == ("kafka-run", 2)  # the first level under the input, as its log files
    (t,), _ = resolve_targets([], [{"path": str(cj), "root": str(tmp_path / "elsewhere")}], None, "d")
    assert t.cluster == "cluster"
    cj.write_text(json.dumps({"brokers": [node], "running": False}))
    assert resolve_targets([], [{"path": str(cj), "root": str(tmp_path / "clusters")}], None, "d") == ([], [])


def test_a_wedged_target_is_backed_off_only_once_it_timed_out_at_the_cap(tmp_path: Path) -> None:
    with reference_endpoint() as ep, silent() as wedged:
        cj = _cluster_json(tmp_path / "prod" / "cluster.json", [{"id": 1, "prometheus": ep.url},
                                                                 {"id": 100, "prometheus": wedged}])
        clock = [1_700_000_000.0]
        # interval 1 s: a scrape's timeout is at most 0.9 s
        reader = _reader(None, clock, clusterjson=json.dumps([{"path": str(cj)}]), timeout="0.3", interval="1")
        end1 = reader.latestOffset(reader.initialOffset(), None)
        assert set(end1["targets"]) == {ep.url, wedged}
        assert reader.pacing.timeout_for(wedged) == 0.6  # timed out at 0.3 s: twice that next, no back-off
        clock[0] += 1.0
        end2 = reader.latestOffset(end1, None)
        assert end2["targets"][wedged]["ts"] > end1["targets"][wedged]["ts"]  # asked again at once
        clock[0] += 1.0
        end3 = reader.latestOffset(end2, None)  # at the cap, 0.9 s, and timed out again: backed off one interval
        assert reader.pacing.timeouts(wedged) == 3
        assert end3["targets"][ep.url]["ts"] > end2["targets"][ep.url]["ts"]  # the broker kept its interval
        clock[0] += 0.5
        end4 = reader.latestOffset(end3, None)
        assert end4["targets"][wedged] == end3["targets"][wedged]  # backed off
        clock[0] += 1.0
        end5 = reader.latestOffset(end4, None)
        assert end5["targets"][wedged]["ts"] > end4["targets"][wedged]["ts"]  # asked again after one interval
        reader.stop()


def test_a_slow_exporter_loses_one_scrape_and_is_then_given_the_time_it_needs(tmp_path: Path) -> None:
    """A busy broker's exporter takes 0.5 s to answer, past the configured 0.3 s: its first scrape times out, the
    next gets twice the time and lands, and from then on its timeout follows its answers (never backed off, never
    timed out again)."""
    with answering(body=b"# TYPE kafka_x gauge\nkafka_x 1.0\n", content_type="text/plain", delay_s=0.5) as slow:
        clock = [1_700_000_000.0]
        reader = _reader(None, clock, targets=json.dumps([{"url": slow, "cluster": "c", "broker_id": 1}]),
                         timeout="0.3", interval="2")
        end, ok = reader.initialOffset(), []
        for _ in range(5):
            start, end = end, reader.latestOffset(end, None)
            ok.append(not any(r["line"].startswith("scrape failed") for r in _read(reader, start, end)))
            clock[0] += 2.0
        # one scrape lost (two on a loaded machine, where 0.5 s of delay can take more than the doubled 0.6 s)
        assert any(ok), ok  # it landed at some point
        first = ok.index(True)
        assert first in (1, 2), ok
        assert all(ok[first:]), ok
        assert reader.pacing.timeouts(slow) == first
        assert 0.5 <= reader.pacing.timeout_for(slow) <= 1.8  # 3 x its answers, under the 2 s interval
        reader.stop()


def test_a_hanging_target_delays_no_other_target_s_scrapes(tmp_path: Path) -> None:
    """With the scraper thread, each target is scraped on its own: while the other target's scrapes hang for
    their 1 s timeout, the broker keeps being scraped every 0.2 s (a round of both took the timeout before)."""
    with reference_endpoint() as ep, silent() as wedged:
        targets = [{"url": ep.url, "cluster": "c", "broker_id": 1}, {"url": wedged, "cluster": "c", "broker_id": 2}]
        reader = PrometheusStreamReader({"interval": "0.2", "timeout": "1", "scrapeahead": "true",
                                         "targets": json.dumps(targets)})
        try:
            end = reader.latestOffset(reader.initialOffset(), None)  # the first round, then the thread
            seen: set[int] = set()

            def five_more() -> bool:
                nonlocal end
                end = reader.latestOffset(end, None)
                entry = end["targets"].get(ep.url)
                if entry:
                    seen.update(ts for ts, _ in (entry.get("scrapes") or [[entry["ts"], 0]]))
                return len(seen) >= 5

            wait_until(five_more, 2.5, lambda: f"the broker's scrapes while the other hangs: {sorted(seen)}",
                       interval=0.1)
            assert reader.pacing.timeouts(wedged) >= 1
        finally:
            reader.stop()


def test_scrape_ahead_samples_on_the_intervals_clock_while_no_batch_is_planned(tmp_path: Path) -> None:
    # a slow micro-batch (a loaded machine) must not leave a gap in the samples: the scraper thread keeps scraping
    # while Spark plans no batch, and the next batch takes every answer, each at its own time and stream position
    spool = tmp_path / "spool"
    with reference_endpoint() as ep:
        opts = {"interval": "0.2", "timeout": "2", "spooldir": str(spool),
                "targets": json.dumps([{"url": ep.url, "cluster": "c", "broker_id": 1}])}
        reader = PrometheusStreamReader({**opts, "scrapeahead": "true"})
        try:
            start = reader.initialOffset()
            first = reader.latestOffset(start, None)  # starts the scraper
            wait_until(lambda: len(reader.store.pending()) >= 4, 20.0, "4 scrapes in the spool", interval=0.05)
            end = reader.latestOffset(first, None)
        finally:
            reader.stop()
        scraper = reader._scraper
        assert scraper is not None
        assert not scraper.is_alive()
        entry = end["targets"][ep.url]
        scrapes = entry["scrapes"]
        assert len(scrapes) >= 3
        times = [ts for ts, _ in scrapes]
        assert times == sorted(times)
        assert all(b - a >= 200 * (1 - INTERVAL_SLACK) for a, b in itertools.pairwise(times))
        assert scrapes[0][1] == entry["from"] == (first["targets"][ep.url]["offset"] if first is not start else 0)
        rows = _read(reader, first, end)
        assert len({r["ingest_ts"] for r in rows}) == len(scrapes)  # one answer per scrape, each stamped its time
        assert [r for r in rows if r["line"].startswith("kafka_network_requestchannel_requestqueuesize ")]
        positions = sorted(r["source_offset"] for r in rows)
        assert positions[0] == entry["from"]
        last = max(rows, key=lambda r: r["source_offset"])
        assert last["source_offset"] + last["line_bytes"] + 1 == entry["offset"]
        # a restarted query replays the batch from the spool: the same rows, nothing scraped again
        assert _read(PrometheusStreamReader(opts), first, end) == rows
        reader.commit(end)
        left = [int(n.rsplit("-", 1)[1].split(".")[0]) for n in reader.store.pending()]
        assert all(ts > times[-1] for ts in left)  # only answers no batch has taken yet


def test_scrape_ahead_must_be_true_or_false() -> None:
    from jobs import PipelineIOError

    targets = json.dumps([{"url": "http://127.0.0.1:1/metrics"}])
    with pytest.raises(PipelineIOError, match="option scrapeAhead: true or false, got 'yes'"):
        PrometheusStreamReader({"targets": targets, "scrapeahead": "yes"})
    assert not PrometheusStreamReader({"targets": targets}).scrape_ahead
