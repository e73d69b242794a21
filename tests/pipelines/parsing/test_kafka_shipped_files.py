"""Files Kafka's scripts and log4j configs write into a log directory are recognised: placed by name or content,
and what planewatch does not use is counted unused with its reason, never quarantined."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.sources.paths import classify_name, describe, is_finished, sniff
from pipelines.parsing.engine_logs import GC_LOG_UNUSED
from tests.pipelines.parsing.parse_helpers import parse_all, raw_log

# kafka-run-class.sh, Java 9+: -Xlog:gc*:file=$LOG_DIR/kafkaServer-gc.log:time,tags:filecount=10,filesize=100M
UNIFIED_GC = [
    "[2026-11-28T03:40:01.120+0000][gc,init] Version: 17.0.13+11-Debian-2 (release)",
    "[2026-11-28T03:40:01.121+0000][gc,heap,coops] Heap address: 0x00000000c0000000, size: 1024 MB",
    "[2026-11-28T03:40:09.532+0000][gc,start    ] GC(3) Pause Young (Normal) (G1 Evacuation Pause)",
    "[2026-11-28T03:40:09.541+0000][gc          ] GC(3) Pause Young (Normal) (G1 Evacuation Pause) 52M->9M(1024M) "
    "8.812ms",
]
# the same flags without decorations chosen (uptime, level, tags), and Java 8's -Xloggc
UPTIME_GC = "[0.011s][info][gc] Using G1"
JAVA8_GC = [
    "OpenJDK 64-Bit Server VM (25.392-b08) for linux-amd64 JRE (1.8.0_392-b08), built on Oct 17 2023",
    "2026-11-28T03:40:09.532+0000: 8.412: [GC pause (G1 Evacuation Pause) (young), 0.0088120 secs]",
]


@pytest.mark.parametrize(("name", "kind"), [
    ("kafkaServer-gc.log", "gc"), ("kafkaServer-gc.log.3", "gc"), ("zookeeper-gc.log", "gc"),
    ("kafkaServer-gc.log.0.current", "gc"), ("gc.log", "gc"),
    ("log-cleaner.log", "log-cleaner"), ("log-cleaner.log.2026-11-28-03", "log-cleaner"),
    ("kafka-authorizer.log", "authorizer"),
    ("state-change.log", "state-change"),
    ("stage-change.log.2026-11-28-03", "state-change"),  # Kafka 4.0.0's log4j2.yaml typo (fixed in 4.0.1)
    ("controller.log.2026-11-28-03", "controller"),
])
def test_kafka_file_names(name: str, kind: str) -> None:
    assert classify_name(name) == ("logs", kind)


@pytest.mark.parametrize("head", [UNIFIED_GC[0], UNIFIED_GC[3], UPTIME_GC, JAVA8_GC[0], JAVA8_GC[1]])
def test_a_gc_log_under_another_name_is_placed_by_its_content(head: str) -> None:
    assert sniff((head + "\n").encode()) == ("logs", "gc")


def test_a_log4j_line_is_not_taken_for_gc() -> None:
    line = "[2026-11-28 03:40:09,532] INFO [Broker id=1] Finished LeaderAndIsr request (state.change.logger)\n"
    assert sniff(line.encode()) == ("logs", "state-change")


def test_a_gc_log_file_in_a_broker_directory(tmp_path: Path) -> None:
    d = tmp_path / "prod" / "broker-2"
    d.mkdir(parents=True)
    (d / "kafkaServer-gc.log.1").write_text("\n".join(UNIFIED_GC) + "\n")
    info = describe(str(tmp_path), str(d / "kafkaServer-gc.log.1"), None, "default")
    assert info is not None
    assert (info.family, info.kind, info.cluster, info.broker_id) == ("logs", "gc", "prod", 2)
    assert is_finished("kafkaServer-gc.log.1", info)


def test_every_gc_line_is_unused_with_its_reason_none_rejected() -> None:
    rows = [raw_log(line, i, "gc") for i, line in enumerate([*UNIFIED_GC, UPTIME_GC, *JAVA8_GC])]
    got = parse_all(rows, "logs")
    assert [route for route, _ in got] == ["unused"] * len(rows)
    assert {row.get("reason") for _, row in got} == {GC_LOG_UNUSED}
