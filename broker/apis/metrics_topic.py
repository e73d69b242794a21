"""The metrics reporter's topic output (``metric.reporter.topic``), like Cruise Control's metrics reporter.

Every ``metrics.interval.ms`` the same JSON samples the JSON-lines reporter writes to ``metrics.dir``
(``broker.metrics.reporter.format_samples``: one object per MBean attribute) are appended to the topic through the
**local log** as one record batch per report (key = the broker id, value = one JSON sample), so a pipeline can read
a broker's metrics with any Kafka consumer, as operators ship ``__CruiseControlMetrics``. The topic is created here
(``num.partitions`` partitions, samples of broker N go to partition N mod partitions) while this broker manages its
own topics; when another controller has made another broker the partition's leader, the report is skipped and one
WARN line says why (a reporter must not fail the broker).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from broker.apis.data_plane import DataPlane
from broker.log import LogError, build_batch
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.metrics.reporter import format_samples
from broker.state import TopicPartition

__all__ = ["MAX_SAMPLES_PER_BATCH", "TopicMetricsReporter"]

# Samples per record batch: one report of a busy broker (~1-2k MBean attributes) stays well below
# message.max.bytes (1 MiB) at ~200 bytes per sample.
MAX_SAMPLES_PER_BATCH = 2000


class TopicMetricsReporter:
    """Appends metric samples to a topic on a daemon thread; :meth:`report` may be called directly (tests).

    Args:
        dp: the data plane (logs, leadership, topic creation).
        registry: the broker's metrics.
        topic: the topic name (e.g. ``__planewatch_metrics``).
        interval_ms: the reporting interval.
        log4j: for the reporter's WARN lines.
        wall_clock: epoch seconds (injected for tests).
    """

    def __init__(self, dp: DataPlane, registry: MetricsRegistry, topic: str, interval_ms: int, log4j: Log4j,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._dp = dp
        self._registry = registry
        self.topic = topic
        self._interval_s = interval_ms / 1000
        self._log = log4j.get_logger("kafka.metrics.TopicMetricsReporter")
        self._clock = wall_clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False
        self.reported = 0  # samples appended so far

    def start(self) -> None:
        """Create the topic if this broker manages topics (consumers can subscribe at once), start the thread."""
        if not self._dp.topic_exists(self.topic):
            self._dp.create_topic(self.topic, -1, -1)
        self._thread = threading.Thread(target=self._run, name="metrics-topic-reporter", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.report()
            except Exception:  # a reporter bug must not take the broker down
                self._log.error("Failed to report metrics to topic " + self.topic, exc_info=True)

    def report(self) -> int:
        """Append one report; returns the number of samples appended (0 when skipped)."""
        ts = int(self._clock() * 1000)
        lines = format_samples(self._registry, self._dp.state.broker_id, ts)
        if not lines:
            return 0
        if not self._dp.topic_exists(self.topic):
            self._dp.create_topic(self.topic, -1, -1)
        parts = self._dp.state.metadata_cache.snapshot.partitions.get(self.topic) or {}
        partition = self._dp.state.broker_id % max(len(parts), 1)
        tp = TopicPartition(self.topic, partition)
        lookup = self._dp.leader_log(tp)
        if lookup.error or lookup.log is None or lookup.state is None:
            if not self._warned:
                self._log.warn(f"Skipping metrics report to {tp}: error code {lookup.error} (not its leader)")
                self._warned = True
            return 0
        key = str(self._dp.state.broker_id).encode()
        appended = 0
        for start in range(0, len(lines), MAX_SAMPLES_PER_BATCH):
            chunk = lines[start:start + MAX_SAMPLES_PER_BATCH]
            batch = build_batch([(key, line.encode()) for line in chunk], base_timestamp=ts)
            try:
                lookup.log.append_as_leader(batch, lookup.state.leader_epoch)
            except LogError as exc:
                self._log.warn(f"Failed to append metrics to {tp}: {exc}")
                break
            appended += len(chunk)
        self._dp.after_leader_append(tp, lookup.log, lookup.state)
        self.reported += appended
        return appended

    def shutdown(self) -> None:
        """Stop the thread (a last report is not written: the logs are closing)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
