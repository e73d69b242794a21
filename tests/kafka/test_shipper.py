"""rsyslog (Debian's, with omkafka) ships Apache Kafka's own log files into a Kafka topic, as operators run it: every
log4j record of every file arrives with its host, file and byte offset (planewatch.kafka.shipper,
conf/rsyslog/planewatch.conf), opens through the `rsyslog` envelope and `host` mapping to its cluster and broker
(jobs.sources.envelopes); an rsyslogd killed with -9 and restarted sends again what it had not persisted, and the
origin (host:file, offset) makes each line one row. On Kafka 3.9.1 and 4.4.0, the brokers' logs shipped into a topic
of the same cluster (a logging cluster's role; one JVM set fewer for the suite)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from jobs.run.runner import run_pipeline
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from planewatch.kafka.shipper import RsyslogShipper, ShippedHost
from schemas.dq import DEDUP_EXPECTATION, DEDUP_SUITE
from tests.kafka.shipped import NEEDS_RSYSLOG, shipped_rows
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.polling import wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420),
              NEEDS_RSYSLOG]

TOPIC = "kafka-logs"
CLUSTER = "shiptest"
# every record shipped within this long of the files' last write
SHIPPED_TIMEOUT_S = 60.0
# topics created to make the brokers log (state-change and server lines) while a shipper is down
MORE_TOPICS = 4
# the version whose shipped topic the pipeline reads after the kill (one Spark leg for the suite's time)
PIPELINE_VERSION = "3.9.1"


def records(path: Path) -> dict[int, str]:
    """A log file's lines by their byte offset (empty lines, which imfile skips, left out)."""
    out: dict[int, str] = {}
    at = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        text = raw.rstrip(b"\r\n")
        if text:
            out[at] = text.decode("utf-8", errors="replace")
        at += len(raw)
    return out


def written(c: KafkaCluster) -> dict[tuple[str, int], str]:
    """(`host:file`, offset) -> record of every log file the brokers wrote."""
    out = {}
    for b in sorted(c.brokers):
        for f in sorted((c.broker_dir(b) / "logs").glob("*.log")):
            for off, rec in records(f).items():
                out[(f"kafka-{b}.{CLUSTER}:{f}", off)] = rec
    return out


def shipped(c: KafkaCluster) -> list[dict[str, object]]:
    """Every record of the topic so far, opened."""
    return shipped_rows(c.bootstrap_servers(), TOPIC)


@pytest.fixture(scope="module", params=["3.9.1", "4.4.0"])
def shipping(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[KafkaCluster, RsyslogShipper]]:
    d = tmp_path_factory.mktemp("ship")
    c = KafkaCluster(KafkaClusterSpec(d / "c", request.param, brokers=3, jmx_exporter=False, log4j="shipped"))
    c.start()
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers()})
        for f in admin.create_topics([NewTopic(TOPIC, 3, 1)]).values():
            f.result(60)
        hosts = [ShippedHost(f"kafka-{b}.{CLUSTER}", c.broker_dir(b) / "logs") for b in sorted(c.brokers)]
        with RsyslogShipper(hosts, d / "rsyslog", c.bootstrap_servers(), TOPIC) as shipper:
            yield c, shipper
    finally:
        c.stop()


def _all_shipped(c: KafkaCluster) -> tuple[dict[tuple[str, int], str], list[dict[str, object]]]:
    holder: dict[str, object] = {}

    def arrived() -> bool:
        want = written(c)
        rows = shipped(c)
        holder["want"], holder["rows"] = want, rows
        return set(want) <= {(r["source"], r["source_offset"]) for r in rows}

    wait_until(arrived, SHIPPED_TIMEOUT_S, "every record of the brokers' logs in the topic", interval=1.0)
    return holder["want"], holder["rows"]  # type: ignore[return-value]


def test_every_record_arrives_with_its_origin_cluster_and_broker(shipping: tuple[KafkaCluster, RsyslogShipper]
                                                                 ) -> None:
    c, _ = shipping
    want, rows = _all_shipped(c)
    by = {(r["source"], r["source_offset"]): r for r in rows}
    assert len(want) > 100  # the brokers' start alone writes hundreds of records
    for key, rec in want.items():
        r = by[key]
        assert r["line"] == rec, key
        assert (r["cluster"], r["broker_id"]) == (CLUSTER, int(str(key[0]).split(".")[0].split("-")[1]))
    kinds = {r["kind"] for r in rows}
    assert {"server", "state-change"} <= kinds
    assert "source-error" not in kinds
    # keyed by host and file: each file's lines in one partition, in the file's order
    where: dict[str, set[int]] = {}
    order: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        source, partition = str(r["source"]), int(str(r["kafka_partition"]))
        where.setdefault(source, set()).add(partition)
        order.setdefault(source, []).append((int(str(r["kafka_offset"])), int(str(r["source_offset"]))))
    assert all(len(parts) == 1 for parts in where.values()), where
    assert len({p for parts in where.values() for p in parts}) > 1  # the files spread over the partitions
    for source, pairs in order.items():
        in_topic = [file_offset for _, file_offset in sorted(pairs)]
        assert in_topic == sorted(in_topic), source


def test_a_shipper_killed_and_restarted_loses_nothing_and_each_line_is_one_origin(
        shipping: tuple[KafkaCluster, RsyslogShipper]) -> None:
    c, shipper = shipping
    _all_shipped(c)
    host = f"kafka-{min(c.brokers)}.{CLUSTER}"
    shipper.kill(host)
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers()})
    for f in admin.create_topics([NewTopic(f"more-{i}-{time.monotonic_ns()}", 3, 2)
                                  for i in range(MORE_TOPICS)]).values():
        f.result(60)
    shipper.start_host(host)
    want, rows = _all_shipped(c)
    origins = [(r["source"], r["source_offset"]) for r in rows]
    # at least once: every record is there; stored by origin: one row per record whatever was sent twice
    assert set(want) <= set(origins)
    distinct = {o: r["line"] for o, r in zip(origins, rows, strict=True)}
    assert all(distinct[k] == v for k, v in want.items())
    print(f"shipped {len(origins)} records for {len(distinct)} lines: {len(origins) - len(distinct)} sent twice")


def test_the_pipeline_stores_every_shipped_line_once_after_the_shipper_was_killed(
        spark: SparkSession, shipping: tuple[KafkaCluster, RsyslogShipper], tmp_path: Path) -> None:
    """After the kill above, the topic holds lines twice; the pipeline reading it (rsyslog envelope, host mapping)
    keeps every line of the brokers' files once, in bronze and in silver, and counts what it dropped."""
    c, _ = shipping
    if c.spec.version != PIPELINE_VERSION:
        pytest.skip(f"the pipeline leg runs on Kafka {PIPELINE_VERSION} (the other version ships the same way)")
    want, _ = _all_shipped(c)
    settings = pipeline_settings(
        tmp_path,
        sources={"files": {"enabled": False},
                 "kafka": {"enabled": True, "bootstrap_servers": c.bootstrap_servers(), "logs_topics": [TOPIC],
                           "logs_envelope": "rsyslog", "logs_mapping": ["host"], "max_records_per_batch": 500}},
        quality={"enabled": False},
    )  # fmt: skip
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    lake = tmp_path / "lake"
    raw = lake_rows(lake, "raw_logs")
    origins = [(r["source"], r["source_offset"]) for r in raw]
    assert len(origins) == len(set(origins))
    assert set(want) <= set(origins)
    assert {(r["cluster"], r["broker_id"]) for r in raw} == {(CLUSTER, b) for b in c.brokers}
    events = lake_rows(lake, "state_change_events")
    keys = [(r["source"], r["source_offset"]) for r in events]
    assert events
    assert len(keys) == len(set(keys))
    dq = [r for r in lake_rows(lake, "dq_results") if r["suite"] == DEDUP_SUITE]
    dropped = sum(r["unexpected_count"] for r in dq if r["expectation"] == DEDUP_EXPECTATION)
    read = sum(r["element_count"] for r in dq if r["expectation"] == DEDUP_EXPECTATION)
    assert dropped > 0  # the killed shipper sent lines again
    assert read == len(raw) + dropped
    print(f"pipeline read {read} shipped records: {len(raw)} lines kept, {dropped} dropped as delivered twice")
