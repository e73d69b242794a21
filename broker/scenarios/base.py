"""What every scenario shares: a JSON-lines timeline, a cluster, bounded produce/consume load, log parsing.

Every scenario prints one JSON object per line to stdout (and appends it to ``DIR/scenario-<name>.jsonl``)::

    {"ts": "2026-11-22T04:40:00.123Z", "ts_ms": 1795322400123, "scenario": "broker-bounce", "event": "kill",
     "broker": 2, ...}

so that a detection can be checked against what was done and when.
"""

from __future__ import annotations

import json
import re
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from broker.cluster.http import ControllerClient
from broker.cluster.launcher import Cluster, ClusterSpec

__all__ = ["Load", "Timeline", "finished_times_ms", "open_connections", "produce", "started_cluster", "verify_load",
           "wait_until"]

# Every wait in a scenario is bounded by this unless it says otherwise.
DEFAULT_WAIT_S = 60.0
_FINISHED = re.compile(r"Finished LeaderAndIsr request in (\d+)ms correlationId")


@dataclass
class Timeline:
    """The scenario's JSON-lines output (see the module docstring)."""

    scenario: str
    path: Path
    out: IO[str] = field(default_factory=lambda: sys.stdout)

    def emit(self, event: str, **fields: Any) -> None:
        """Print and append one event."""
        now = time.time()
        ts = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(now * 1000) % 1000:03d}Z"
        line = json.dumps({"ts": ts, "ts_ms": int(now * 1000), "scenario": self.scenario, "event": event, **fields})
        print(line, file=self.out, flush=True)
        with open(self.path, "a") as fh:
            fh.write(line + "\n")


@contextmanager
def started_cluster(spec: ClusterSpec, timeline: Timeline) -> Iterator[Cluster]:
    """Start a cluster, report it, always stop it."""
    cluster = Cluster(spec)
    try:
        cluster.start()
        timeline.emit("cluster-started", brokers=spec.brokers, bootstrap=cluster.bootstrap_servers(),
                      fetcher_model=spec.fetcher_model, control_plane=spec.brokers_advertise_control,
                      cached_update_metadata=spec.cached_update_metadata)
        yield cluster
    finally:
        cluster.stop()
        timeline.emit("cluster-stopped")


def wait_until(what: str, fn: Any, timeout_s: float = DEFAULT_WAIT_S, interval_s: float = 0.2) -> Any:
    """Poll ``fn`` until truthy; TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = fn()
        except (OSError, ConnectionError, KeyError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


def controller_status(cluster: Cluster) -> dict[str, Any]:
    """The controller's view of the cluster."""
    return ControllerClient(cluster.controller_url, timeout_s=10).status()


def create_topic(cluster: Cluster, topic: str, partitions: int, rf: int) -> None:
    """Create a topic through a broker (CreateTopics forwarded to the controller) and wait for its leaders."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    for fut in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)]).values():
        fut.result(60)
    wait_until(f"leaders of {topic}", lambda: len([p for p in controller_status(cluster)["partitions"]
                                                   if p["topic"] == topic and p["leader"] >= 0]) == partitions)


class Load:
    """Bounded acks=all produce load in a background thread (count and time bounded); counts what was acked."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, max_records: int, max_seconds: float,
                 value_bytes: int = 100, acks: str = "all", rate: float = 0.0) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.value = b"x" * value_bytes
        self.acks = acks
        self.rate = rate  # records per second; 0 = as fast as possible
        self.acked: list[int] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{topic}", daemon=True)

    def start(self) -> Load:
        """Start producing."""
        self._thread.start()
        return self

    def wait(self) -> None:
        """Wait until the load ends on its own bounds (count or time)."""
        self._thread.join(self.max_seconds + 60)

    def stop(self) -> None:
        """Stop and wait for outstanding deliveries (bounded)."""
        self._stop.set()
        self._thread.join(self.max_seconds + 60)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append(int(msg.key()))
        else:
            self.failed += 1

    def _run(self) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": self.acks, "linger.ms": 5,
                      "message.timeout.ms": 60_000})
        start = time.monotonic()
        end = start + self.max_seconds
        for i in range(self.max_records):
            if self._stop.is_set() or time.monotonic() > end:
                break
            if self.rate > 0 and (ahead := start + i / self.rate - time.monotonic()) > 0:
                p.poll(ahead)
            produce(p, self.topic, i, self.value, i % self.partitions, self._on_delivery)
        p.flush(60)


def produce(p: Any, topic: str, key: int, value: bytes, partition: int, on_delivery: Any) -> None:
    """Produce one record keyed `key` (waiting while the client's queue is full), then serve delivery reports."""
    while True:
        try:
            p.produce(topic, key=str(key).encode(), value=value, partition=partition, on_delivery=on_delivery)
            break
        except BufferError:
            p.poll(0.05)
    p.poll(0)


@contextmanager
def open_connections(port: int, connections: int, connect_timeout_s: float) -> Iterator[list[socket.socket]]:
    """Open up to ``connections`` idle TCP connections to 127.0.0.1:``port`` (stopping at the first that fails: past
    a broker's limit the kernel's listen backlog still completes handshakes, then connects time out); always closed
    at exit. Yields the open sockets."""
    socks: list[socket.socket] = []
    try:
        for _ in range(connections):
            try:
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=connect_timeout_s))
            except OSError:
                break
        yield socks
    finally:
        for s in socks:
            s.close()


def consume_keys(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 60.0) -> list[int]:
    """Read every partition from offset 0 until ``expected`` distinct keys or the timeout; every key read."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scenario-{topic}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, q, 0) for q in range(partitions)])
        got: list[int] = []
        distinct: set[int] = set()
        end = time.monotonic() + timeout_s
        while len(distinct) < expected and time.monotonic() < end:  # producer retries may have written duplicates
            batch = [int(m.key() or b"-1") for m in c.consume(1000, 0.5) if m.error() is None]
            got.extend(batch)
            distinct.update(batch)
        return got
    finally:
        c.close()


def verify_load(tl: Timeline, bootstrap: str, topic: str, partitions: int, load: Load) -> None:
    """Read the topic back and report in the timeline what the load acknowledged, consumed, duplicated and lost."""
    keys = consume_keys(bootstrap, topic, partitions, len(set(load.acked)))
    got = set(keys)
    tl.emit("verified", topic=topic, acked=len(load.acked), failed=load.failed, consumed=len(got),
            duplicates=len(keys) - len(got), lost=len(set(load.acked) - got))


def finished_times_ms(cluster: Cluster) -> list[int]:
    """LeaderAndIsr handling times (``Finished LeaderAndIsr request in Nms``) from every broker's state-change.log."""
    out: list[int] = []
    for bid in cluster.brokers:
        for f in (cluster.broker_dir(bid) / "logs").glob("state-change.log*"):
            out.extend(int(m.group(1)) for m in _FINISHED.finditer(f.read_text(errors="replace")))
    return out


def percentiles(values: list[int]) -> dict[str, float]:
    """p50 / p99 / max of a list (zeros when empty)."""
    if not values:
        return {"count": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"count": len(values), "p50": float(statistics.median(ordered)), "p99": float(p99),
            "max": float(ordered[-1])}
