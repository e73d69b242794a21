"""planewatch_kafka's planning from the partitions' watermarks (no broker: the watermarks are given)."""

from __future__ import annotations

import logging

import pytest

from jobs.sources.kafka_stream import kafka_batch_records
from jobs.sources.streams import _KafkaStreamReader

OPTIONS = {"bootstrap.servers": "127.0.0.1:1", "topics": "logs", "family": "logs"}


def _reader(marks: dict[str, tuple[int, int]], monkeypatch: pytest.MonkeyPatch) -> _KafkaStreamReader:
    reader = _KafkaStreamReader(dict(OPTIONS))
    monkeypatch.setattr(reader, "_watermarks", lambda: marks)
    return reader


def test_a_topic_deleted_and_created_again_is_read_from_its_start_and_said(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # the checkpoint stood at 500 and 40; the topic now holds 12 and 60 records
    reader = _reader({"logs/0": (0, 12), "logs/1": (0, 60)}, monkeypatch)
    start = {"partitions": {"logs/0": 500, "logs/1": 40}}
    with caplog.at_level(logging.WARNING):
        end = reader.latestOffset(start, None)
    assert end == {"partitions": {"logs/0": 12, "logs/1": 60}}
    assert "logs/0: the checkpoint's position 500 is past the partition's end 12" in caplog.text
    ranges = [(r.topic, r.partition, r.start, r.end) for r in reader.partitions(start, end)]
    assert ranges == [("logs", 0, 0, 12), ("logs", 1, 40, 60)]


def test_the_record_budget_counts_a_created_again_partition_from_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _reader({"logs/0": (0, 12)}, monkeypatch)

    class Limit:
        max_rows = 5

    end = reader.latestOffset({"partitions": {"logs/0": 500}}, Limit())
    assert end == {"partitions": {"logs/0": 5}}


def test_a_deleted_topic_not_created_yet_keeps_its_position(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _reader({}, monkeypatch)
    assert reader.latestOffset({"partitions": {"logs/0": 500}}, None) == {"partitions": {"logs/0": 500}}


def test_a_kafka_batch_is_sized_from_its_logged_offsets_in_either_readers_form() -> None:
    assert kafka_batch_records({"partitions": {"logs/0": 10, "logs/1": 5}},
                               {"partitions": {"logs/0": 25, "logs/1": 5, "logs/2": 3}}) == 18
    assert kafka_batch_records({"logs": {"0": 10}}, {"logs": {"0": 40, "1": 2}}) == 32
    assert kafka_batch_records(None, {"logs": {"0": 40}}) is None
    assert kafka_batch_records({}, {"logs": {"0": 40}}) == 40  # a first batch: at most every record before its end
    assert kafka_batch_records({"logs": {"0": 40}}, {"logs": {"0": 3}}) is None  # created again: read it whole
