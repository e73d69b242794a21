"""An operator's Prometheus for the tests: Debian's prometheus on 127.0.0.1 holding an hour of two brokers' Kafka
series it never scraped (backfilled with promtool, as an operator imports history), one of them with a control-plane
queue backlog, a third broker stopped after 20 minutes (removed from the cluster), and a target no label rule
maps."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from planewatch.kafka.prometheus import OperatorPrometheus, backfill

QUEUE = "kafka_network_requestchannel_controlplanerequestqueuesize"
URP = "kafka_server_replicamanager_underreplicatedpartitions"
STEP_S = 15  # the operators' common scrape interval
HISTORY_S = 3600
# broker 2's control-plane queue holds 15 requests (of 20) for this stretch of the hour: CONTROL_PLANE_QUEUE_BACKLOG
BACKLOG = (1200, 1320)
BROKERS = (1, 2)
STOPPED_BROKER, STOPPED_AFTER_S = 3, 1200  # scraped for the hour's first 20 minutes only
UNMAPPED_INSTANCE = "10.0.0.9:7071"


@dataclass(frozen=True)
class History:
    """What the backfilled Prometheus holds: its URL, the first and last sample times (epoch s), samples per target."""

    url: str
    first_s: int
    last_s: int

    @property
    def per_target(self) -> int:
        return len(range(self.first_s, self.last_s + 1, STEP_S)) * 2  # two series per broker

    @property
    def stopped_target(self) -> int:
        return len(range(self.first_s, self.first_s + STOPPED_AFTER_S, STEP_S)) * 2

    @property
    def per_broker(self) -> dict[int, int]:
        """Samples per broker Prometheus holds."""
        return {**dict.fromkeys(BROKERS, self.per_target), STOPPED_BROKER: self.stopped_target}


def history_text(first_s: int, last_s: int) -> str:
    """OpenMetrics text of the hour: per broker its control-plane queue and under-replicated partitions, every STEP_S;
    and the same series of a target whose instance is an IP address (no broker in its labels)."""
    lines: list[str] = []
    for name in (QUEUE, URP):
        lines.append(f"# TYPE {name} gauge")
        for instance in [f"kafka-{b}.prod:7071" for b in (*BROKERS, STOPPED_BROKER)] + [UNMAPPED_INSTANCE]:
            end = first_s + STOPPED_AFTER_S - 1 if instance.startswith(f"kafka-{STOPPED_BROKER}.") else last_s
            for t in range(first_s, end + 1, STEP_S):
                backlog = instance.startswith("kafka-2.") and name == QUEUE and (
                    first_s + BACKLOG[0] <= t < first_s + BACKLOG[1])
                lines.append(f'{name}{{job="kafka",instance="{instance}"}} {15 if backlog else 0} {t}')
    return "\n".join([*lines, "# EOF"]) + "\n"


@contextmanager
def backfilled_prometheus(root: Path) -> Iterator[History]:
    """Prometheus on 127.0.0.1 with the last hour backfilled (up to a minute ago); stopped on exit."""
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        pytest.fail("Debian's prometheus is not installed: scripts/bootstrap.sh installs it")
    last = int(time.time()) - 60
    first = last - HISTORY_S + STEP_S
    backfill(root / "data", history_text(first, last))
    with OperatorPrometheus(root) as prom:
        yield History(prom.url, first, last)
