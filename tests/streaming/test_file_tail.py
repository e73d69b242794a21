"""The byte-offset file tailer without Spark: growing files, partial lines, rotation, deletion, pieces."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from jobs.sources import file_tail
from jobs.sources.file_tail import plan, read_piece, split
from jobs.sources.paths import broker_id_from_path, classify_name, describe, sniff

L1 = "[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 (state.change.logger)"


def _read(root: Path, start: dict, family: str = "logs", max_bytes: int = 1 << 20, **kw) -> tuple[dict, list[dict]]:
    end = plan(str(root), family, start, max_bytes, **kw).files
    rows: list[dict] = []
    for piece in split(family, start, end):
        for batch in read_piece(piece):
            rows.extend(batch.to_pylist())
    # offsets must survive a JSON round trip (they live in Spark's checkpoint)
    return json.loads(json.dumps(end)), rows


def test_classification_and_broker_ids(tmp_path: Path) -> None:
    assert classify_name("state-change.log.2024-05-10-09") == ("logs", "state-change")
    assert classify_name("kafka-request.log") == ("logs", "request")
    assert classify_name("scrape-1614672000000.prom") == ("metrics", "prometheus")
    assert classify_name("00000000000000000000.log") is None
    assert broker_id_from_path("demo/broker-2/metrics/x.prom") == 2
    assert broker_id_from_path("logs/kafka_broker3.log") == 3
    assert broker_id_from_path("demo/node/x.log") is None
    assert sniff(b'{"name": "x"}\n') == ("metrics", "json")
    assert sniff(b"# TYPE kafka_x untyped\nkafka_x 1.0\n") == ("metrics", "prometheus")
    assert sniff(L1.encode()) == ("logs", "state-change")
    assert sniff(b"\x00\x01binary") is None
    d = tmp_path / "prod" / "broker-7"
    d.mkdir(parents=True)
    (d / "server.log").write_text("x\n")
    (d / "00000000000000000000.log").write_bytes(b"\x00" * 10)
    info = describe(str(tmp_path), str(d / "server.log"), None, "dflt")
    assert info is not None
    assert (info.family, info.kind, info.cluster, info.broker_id) == ("logs", "server", "prod", 7)
    assert describe(str(tmp_path), str(d / "00000000000000000000.log"), None, "dflt") is None
    # Kafka's state files in a partition's and a log directory's folders, as Apache Kafka 4.4 writes them
    part = d / "data" / "fence-0"
    part.mkdir(parents=True)
    (part / "partition.metadata").write_text("version: 0\ntopic_id: uXHy5JwdS9y7t_hj6ls_1A\n")
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (d / "data" / "quorum-state").write_text('{"clusterId":"","leaderId":100,"leaderEpoch":1,"votedId":-1}\n')
    (d / "data" / "meta.properties").write_text("#\nnode.id=7\nversion=1\n")
    for name in ("fence-0/partition.metadata", "fence-0/leader-epoch-checkpoint", "quorum-state", "meta.properties"):
        assert describe(str(tmp_path), str(d / "data" / name), None, "dflt") is None, name
    # an operator's configuration beside the logs: the JMX exporter's first line reads like a Prometheus sample
    (d / "jmx-exporter.yaml").write_text("startDelaySeconds: 120\nlowercaseOutputName: true\n")
    (d / "log4j.properties").write_text("log4j.rootLogger=INFO, stdout\n")
    for name in ("jmx-exporter.yaml", "log4j.properties"):
        assert describe(str(tmp_path), str(d / name), None, "dflt") is None, name
    flat = describe(str(d), str(d / "server.log"), "given", "dflt")
    assert flat is not None
    assert flat.cluster == "given"


def test_json_documents_are_not_metric_json_lines(tmp_path: Path) -> None:
    d = tmp_path / "c1" / "cluster"
    d.mkdir(parents=True)
    (d / "cluster.json").write_text('{\n  "brokers": [\n    {"id": 1}\n  ]\n}\n')
    (d / "metrics.json").write_text('{"ts": 1, "broker_id": 1, "mbean": "m", "value": 1.0}\n')
    assert describe(str(tmp_path), str(d / "cluster.json"), None, "dflt") is None
    info = describe(str(tmp_path), str(d / "metrics.json"), None, "dflt")
    assert info is not None
    assert (info.family, info.kind, info.cluster) == ("metrics", "json", "c1")


def test_growing_file_partial_line_rotation_and_deletion(tmp_path: Path) -> None:
    b = tmp_path / "broker-2"
    b.mkdir()
    log = b / "state-change.log"
    log.write_text(L1 + "\nsecond line\nthird, partial")
    off, rows = _read(tmp_path, {})
    assert [r["line"] for r in rows] == [L1, "second line"]
    assert [r["source_offset"] for r in rows] == [0, len(L1) + 1]
    assert rows[0]["broker_id"] == 2
    assert rows[0]["cluster"] == "default"
    # The partial line waits; when completed it is read once, from its start.
    with log.open("a") as fh:
        fh.write(" now complete\n")
    off, rows = _read(tmp_path, off)
    assert [r["line"] for r in rows] == ["third, partial now complete"]
    # Nothing new: nothing read.
    off, rows = _read(tmp_path, off)
    assert rows == []
    # log4j rotation: the file is renamed (same inode) after one more line, a new file takes its name.
    with log.open("a") as fh:
        fh.write("fourth\n")
    os.rename(log, b / "state-change.log.2021-03-02-08")
    log.write_text("new file line\n")
    off, rows = _read(tmp_path, off)
    assert sorted(r["line"] for r in rows) == ["fourth", "new file line"]
    assert {r["source"] for r in rows} == {str(b / "state-change.log.2021-03-02-08"), str(log)}
    # A deleted file disappears from the offsets; the rest keeps going.
    (b / "state-change.log.2021-03-02-08").unlink()
    with log.open("a") as fh:
        fh.write("after delete\n")
    off, rows = _read(tmp_path, off)
    assert [r["line"] for r in rows] == ["after delete"]
    assert len(off) == 1


def test_piece_deleted_between_plan_and_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("a\nb\n")
    end = plan(str(tmp_path), "logs", {}, 1 << 20).files
    log.unlink()
    assert [list(read_piece(p)) for p in split("logs", {}, end)] == [[]]


def test_budget_continuations_huge_and_bad_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_tail, "MAX_LINE_BYTES", 100)
    log = tmp_path / "server.log"
    trace = (
        "[2021-03-02 08:00:02,000] ERROR boom (kafka.server.ReplicaManager)\n"
        "java.io.IOException: x\n\tat a.B.c(B.java:1)\nCaused by: y\n\t... 3 more\n"
    )
    big = "[2021-03-02 08:00:03,000] INFO " + "z" * 500
    log.write_bytes(b"\xff\xfe not utf8\n\n" + trace.encode() + big.encode() + b"\nlast\n")
    off, rows = _read(tmp_path, {}, max_bytes=15)  # budget: only the first line
    assert [r["line"] for r in rows] == ["\ufffd\ufffd not utf8"]
    off, rows = _read(tmp_path, off)
    lines = [r["line"] for r in rows]
    # The exception line log4j prints under an ERROR line continues it (Apache Kafka 3.9 writes them so), and its
    # stack frames and causes join it too: one record, capped like any record.
    assert lines[0].startswith("[2021-03-02 08:00:02,000] ERROR boom (kafka.server.ReplicaManager)\njava.io.IOExc")
    assert rows[0]["line_bytes"] == len(trace) - 1
    assert rows[1]["truncated"]
    assert rows[1]["line_bytes"] == len(big)
    assert len(lines[1]) == 100
    assert lines[2] == "last"
    assert not rows[2]["truncated"]


def test_pieces_cover_each_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_tail, "SPLIT_BYTES", 64)
    log = tmp_path / "server.log"
    content = []
    for i in range(200):
        content.append(f"[2021-03-02 08:00:00,{i:03d}] INFO line {i} (x)")
        if i % 7 == 0:
            content.append(f"\tat frame {i}")
    log.write_text("\n".join(content) + "\n")
    end = plan(str(tmp_path), "logs", {}, 1 << 20).files
    pieces = split("logs", {}, end)
    assert len(pieces) > 10
    rows = [r for p in pieces for b in read_piece(p) for r in b.to_pylist()]
    assert [r["line"].split("\n")[0] for r in rows] == [c for c in content if not c.startswith("\t")]
    assert sum(1 for r in rows if "\tat frame" in r["line"]) == len([i for i in range(200) if i % 7 == 0])


def test_pack_groups_small_pieces_in_order_and_keeps_big_ones_alone() -> None:
    def piece(i: int, size: int) -> file_tail.Piece:
        return file_tail.Piece(f"/in/f{i}", 1, i, 0, size, 0, size, "metrics", "prometheus", "c", 1)

    pieces = [piece(0, 40), piece(1, 40), piece(2, 30), piece(3, 200), piece(4, 10), piece(5, 100)]
    groups = file_tail.pack(pieces, file_tail.piece_bytes, max_bytes=100)
    assert [[p.ino for p in g] for g in groups] == [[0, 1], [2], [3], [4], [5]]
    assert [p for g in groups for p in g] == pieces  # every piece once, in order
    assert all(sum(p.end - p.start for p in g) <= 100 or len(g) == 1 for g in groups)
    assert file_tail.pack([], file_tail.piece_bytes) == []


def _planned_rows(root: Path, start: dict, now: float, family: str = "logs", max_bytes: int = 1 << 20,
                  quiet: float = 30.0) -> tuple[dict, list[str]]:
    end = plan(str(root), family, start, max_bytes, now=now, tail_quiet_s=quiet).files
    lines = [r["line"] for p in split(family, start, end) for b in read_piece(p) for r in b.to_pylist()]
    return json.loads(json.dumps(end)), lines


def test_last_line_without_newline_read_once_the_file_is_finished_or_quiet(tmp_path: Path) -> None:
    b = tmp_path / "broker-1"
    (b / "metrics").mkdir(parents=True)
    grow = b / "server.log"
    grow.write_text(L1 + "\nunterminated tail")
    rotated = b / "state-change.log.2021-03-02-08"
    rotated.write_text(L1 + "\nrotated tail")
    scrape = b / "metrics" / "scrape-1.prom"
    scrape.write_text("kafka_a 1.0 1614672000000\nkafka_b 2.0 1614672000000")
    t0 = 1_700_000_000.0
    for f in (grow, rotated, scrape):
        os.utime(f, (t0, t0))
    # Just written: nothing unterminated is read, the finished files being possibly mid-write.
    off, lines = _planned_rows(tmp_path, {}, t0 + 0.5)
    assert sorted(lines) == [L1, L1]
    moff, mlines = _planned_rows(tmp_path, {}, t0 + 0.5, "metrics")
    assert mlines == ["kafka_a 1.0 1614672000000"]
    # Settled: a scrape answer and a rotated log are finished; the growing log's tail still waits for tail_quiet_s.
    off, lines = _planned_rows(tmp_path, off, t0 + file_tail.FINISHED_SETTLE_S)
    assert lines == ["rotated tail"]
    moff, mlines = _planned_rows(tmp_path, moff, t0 + file_tail.FINISHED_SETTLE_S, "metrics")
    assert mlines == ["kafka_b 2.0 1614672000000"]
    assert all(e["offset"] == e["size"] for e in moff.values())
    off, lines = _planned_rows(tmp_path, off, t0 + 29.0)
    assert lines == []
    off, lines = _planned_rows(tmp_path, off, t0 + 30.0)
    assert lines == ["unterminated tail"]
    assert all(e["offset"] == e["size"] for e in off.values())
    # Nothing is read twice; lines appended later are read as usual.
    with grow.open("a") as fh:
        fh.write("\nnext line\n")
    off, lines = _planned_rows(tmp_path, off, time.time())
    assert lines == ["next line"]


def test_a_tail_longer_than_the_batch_budget_is_taken_whole_once_quiet(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("x" * 100)  # one line, no newline, longer than the budget
    t0 = 1_700_000_000.0
    os.utime(log, (t0, t0))
    off, lines = _planned_rows(tmp_path, {}, t0 + 1, max_bytes=10)
    assert lines == []
    _, lines = _planned_rows(tmp_path, off, t0 + 60, max_bytes=10)
    assert lines == ["x" * 100]
