"""What the shipper tests share: whether rsyslog with omkafka is here, and a topic's records read back whole and
opened as the pipeline opens them (`rsyslog` envelope, `host` mapping)."""

from __future__ import annotations

import polars as pl
import pytest
from confluent_kafka import Consumer, TopicPartition

from jobs.sources.envelopes import open_envelopes, rules_from_config
from planewatch.kafka.shipper import RsyslogMissing, rsyslogd
from schemas.inputs import Envelope

__all__ = ["NEEDS_RSYSLOG", "shipped_rows"]

try:
    rsyslogd()
    _HAVE_RSYSLOG = True
except RsyslogMissing:
    _HAVE_RSYSLOG = False

NEEDS_RSYSLOG = pytest.mark.skipif(not _HAVE_RSYSLOG, reason="rsyslog-kafka is not installed (scripts/bootstrap.sh)")
# records asked for at most per consume call
CONSUME_BATCH = 10_000


def shipped_rows(bootstrap: str, topic: str) -> list[dict[str, object]]:
    """Every record of `topic` so far (each partition from its low to its high watermark), opened, with where it lies
    in the topic (`kafka_partition`, `kafka_offset`: one row per rsyslog record)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "shipped-rows", "log_level": 0,
                         "enable.auto.commit": False})
    values: list[bytes | None] = []
    sources: list[str] = []
    offsets: list[int] = []
    try:
        for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi <= lo:
                continue
            consumer.assign([TopicPartition(topic, p, lo)])
            got = 0
            while got < hi - lo:
                for m in consumer.consume(min(CONSUME_BATCH, hi - lo - got), timeout=5):
                    if m.error() is None:
                        values.append(m.value())
                        sources.append(f"kafka:{topic}/{p}")
                        offsets.append(int(m.offset() or 0))
                        got += 1
    finally:
        consumer.close()
    rows = open_envelopes(values, [None] * len(values), sources, offsets, Envelope.RSYSLOG,
                          rules_from_config(["host"]), None, "default")
    assert rows.height == len(values)
    return rows.with_columns(pl.Series("kafka_partition", [int(s.rsplit("/", 1)[1]) for s in sources]),
                             pl.Series("kafka_offset", offsets)).to_dicts()
