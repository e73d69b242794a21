"""The logging cluster goes down while a broker keeps logging: rsyslog (omkafka, retrying forever) holds the lines
and delivers them when the logging cluster is back; every line arrives, each origin once after de-duplication. On
Apache Kafka 3.9.1 as the logging cluster (one broker, stopped with SIGTERM and started again on its port), the
broker's log a file the test appends to in log4j's layout."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from planewatch.kafka.shipper import RsyslogShipper, ShippedHost
from tests.kafka.shipped import NEEDS_RSYSLOG, shipped_rows
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300),
              NEEDS_RSYSLOG]

TOPIC = "kafka-logs"
HOST = "kafka-4.outage"
# The logging cluster stays down this long while the broker logs (operators see minutes; the suite's time is short)
OUTAGE_S = 20.0
LINES_BEFORE, LINES_DURING, LINES_AFTER = 50, 100, 50
# every line in the topic within this long of the logging cluster's return
DELIVERED_S = 90.0


def _line(n: int) -> str:
    t = time.gmtime()
    return (f"[{time.strftime('%Y-%m-%d %H:%M:%S', t)},000] INFO [Broker id=4] line {n} while the logging cluster "
            "may be away (state.change.logger)")


@pytest.fixture
def logging_kafka(tmp_path: Path) -> Iterator[KafkaCluster]:
    c = KafkaCluster(KafkaClusterSpec(tmp_path / "logging", "3.9.1", brokers=1, jmx_exporter=False, log4j="shipped"))
    c.start()
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers(), "log_level": 0})
        for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
            f.result(60)
        yield c
    finally:
        c.stop()


def test_lines_logged_while_the_logging_cluster_is_down_arrive_when_it_is_back(
        logging_kafka: KafkaCluster, tmp_path: Path) -> None:
    logs = tmp_path / "broker-4" / "logs"
    logs.mkdir(parents=True)
    log = logs / "state-change.log"
    written: list[str] = []

    def write(n: int) -> None:
        with log.open("a") as fh:
            for _ in range(n):
                written.append(_line(len(written)))
                fh.write(written[-1] + "\n")

    def arrived() -> set[str]:
        return {str(r["line"]) for r in shipped_rows(logging_kafka.bootstrap_servers(), TOPIC)}

    with RsyslogShipper([ShippedHost(HOST, logs)], tmp_path / "rsyslog", logging_kafka.bootstrap_servers(), TOPIC):
        write(LINES_BEFORE)
        wait_until(lambda: len(arrived()) == LINES_BEFORE, 60, "the first lines in the topic", interval=1.0)
        logging_kafka.kill_broker(1, signal.SIGTERM)
        deadline = time.monotonic() + OUTAGE_S
        while time.monotonic() < deadline:  # the broker keeps logging while its logs cannot leave
            write(LINES_DURING // 10)
            time.sleep(OUTAGE_S / 10)
        logging_kafka.start_broker(1)
        write(LINES_AFTER)
        wait_until(lambda: arrived() >= set(written), DELIVERED_S, "every line in the topic after the outage",
                   interval=2.0)
    rows = shipped_rows(logging_kafka.bootstrap_servers(), TOPIC)
    origins = [(r["source"], r["source_offset"]) for r in rows]
    by_origin = {o: r["line"] for o, r in zip(origins, rows, strict=True)}
    assert sorted(by_origin.values()) == sorted(written)  # each line once by its origin, none lost
    assert {(r["cluster"], r["broker_id"]) for r in rows} == {("outage", 4)}
    print(f"{len(written)} lines, {len(rows)} records: {len(rows) - len(by_origin)} delivered twice")
