"""The broker's logs across its ``log.dirs`` (Kafka's ``LogManager``).

Each log dir holds one directory per partition plus three offset checkpoints (``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` for high watermarks), a ``.lock`` file held
with ``flock`` while the broker runs, and ``.kafka_cleanshutdown`` written by a clean :meth:`LogManager.shutdown`
and removed at the next startup: without it, logs are recovered from their recovery points.

Background work (:meth:`LogManager.start`): one daemon thread runs retention (``log.retention.check.interval.ms``),
the ``flush.ms`` policy, the checkpoints, and closes the descriptors of deleted segments. Every step can also be
called directly (tests, the broker's own scheduler).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from broker.log4j import Log4j, default_log4j
from broker.metrics import MetricName, MetricsRegistry
from broker.settings import LogSettings

from .checkpoint import CheckpointDelay, TopicPartition, read_offsets_checkpoint, write_offsets_checkpoint
from .config import LogConfig, LogManagerConfig
from .errors import LogDirInUseError, LogError, StorageError
from .log import Log, wall_clock_ms

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOCK_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "LogManager",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"
# The background thread wakes at least this often, so stop() returns promptly and small intervals are honoured.
SCHEDULER_TICK_S = 0.2
# Kafka's topic name rules (Topic.validate): at most 249 chars of [a-zA-Z0-9._-].
MAX_TOPIC_LENGTH = 249
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


_LOG_GAUGES = ("NumLogSegments", "LogStartOffset", "LogEndOffset", "Size")


def validate_topic_name(topic: str) -> None:
    """Kafka's topic name rules, with Kafka 2.8's messages (``org.apache.kafka.common.internals.Topic.validate``).

    Raises:
        ValueError: empty, ``.``/``..``, longer than 249 characters, or an illegal character.
    """
    if not topic:
        raise ValueError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise ValueError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_LENGTH:
        raise ValueError(f"Topic name is illegal, it can't be longer than {MAX_TOPIC_LENGTH} characters, topic "
                         f"name: {topic}")
    if not set(topic) <= _LEGAL_TOPIC_CHARS:
        raise ValueError(f'Topic name "{topic}" is illegal, it contains a character other than ASCII alphanumerics, '
                         f"'.', '_' and '-'")


class LogManager:
    """Every partition log of a broker. Construct, then :meth:`startup` (loads), optionally :meth:`start`."""

    def __init__(self, log_dirs: Sequence[str | os.PathLike[str]], config: LogConfig | None = None,
                 manager_config: LogManagerConfig | None = None, *, clock: Callable[[], int] = wall_clock_ms,
                 log4j: Log4j | None = None, metrics: MetricsRegistry | None = None) -> None:
        if not log_dirs:
            raise ValueError("log.dirs must name at least one directory")
        self.log_dirs = [Path(d).resolve() for d in log_dirs]
        self.default_config = config or LogConfig()
        self.manager_config = manager_config or LogManagerConfig()
        self.epoch_checkpoint_delay = CheckpointDelay(self.manager_config.epoch_checkpoint_delay_ms)
        self._clock = clock
        self._log4j = log4j or default_log4j()
        self.logger = self._log4j.get_logger("kafka.log.LogManager")
        self._logs: dict[TopicPartition, Log] = {}
        self._topic_configs: dict[str, LogConfig] = {}
        self._lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()  # the scheduler and truncations both write the checkpoints
        self._lock_fds: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.metrics = metrics
        self._flush_listener: Callable[[float], None] | None = None
        if metrics is not None:
            metrics.gauge(MetricName.of("kafka.log", "LogManager", "OfflineLogDirectoryCount"), lambda: 0)
            self._flush_listener = metrics.histogram(
                MetricName.of("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs")).update

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, clock: Callable[[], int] = wall_clock_ms,
                        log4j: Log4j | None = None, metrics: MetricsRegistry | None = None) -> LogManager:
        """A manager configured from raw ``server.properties`` strings (see :meth:`from_settings`).

        Raises:
            ValueError: a bad value (Kafka's ConfigException text).
        """
        return cls.from_settings(LogSettings.from_properties(props), clock=clock, log4j=log4j, metrics=metrics)

    @classmethod
    def from_settings(cls, settings: LogSettings, *, clock: Callable[[], int] = wall_clock_ms,
                      log4j: Log4j | None = None, metrics: MetricsRegistry | None = None) -> LogManager:
        """A manager over ``log.dirs`` (else ``log.dir``) with the broker's ``log.*`` topic defaults and the
        scheduler intervals."""
        return cls(list(settings.log_dirs), LogConfig.from_settings(settings), LogManagerConfig.from_settings(settings),
                   clock=clock, log4j=log4j, metrics=metrics)

    # -- startup ------------------------------------------------------------------------------------------------
    def startup(self) -> None:
        """Create and lock the log dirs, then load every partition directory found (recovering after a crash).

        Raises:
            LogDirInUseError: another process holds a log dir's ``.lock``.
        """
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                self._unlock_dirs()
                raise LogDirInUseError(f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance in "
                                       f"another process or thread is using this directory.") from None
            self._lock_fds.append(fd)
        started = time.monotonic()
        self.logger.info(f"Loading logs from log dirs ArrayBuffer({', '.join(map(str, self.log_dirs))})")
        for log_dir in self.log_dirs:
            self._load_dir(log_dir)
        self.logger.info(f"Logs loading complete in {int((time.monotonic() - started) * 1000)} ms.")

    def _load_dir(self, log_dir: Path) -> None:
        clean_file = log_dir / CLEAN_SHUTDOWN_FILE
        clean = clean_file.exists()
        if not clean:
            self.logger.info(f"Attempting recovery for all logs in {log_dir} since no clean shutdown file was found")
        recovery = self._read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        starts = self._read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        watermarks = self._read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
        for entry in sorted(log_dir.iterdir()):
            if not entry.is_dir():
                continue
            if entry.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(entry, ignore_errors=True)
                continue
            try:
                tp = TopicPartition.parse_dir_name(entry.name)
            except ValueError:
                self.logger.warn(f"Skipping directory {entry}: not a topic-partition directory")
                continue
            self.logger.debug(f"Loading log '{tp}'")
            log = Log(entry, tp, self._topic_configs.get(tp.topic, self.default_config),
                      recovery_point=recovery.get(tp, 0), log_start_offset=starts.get(tp, 0),
                      high_watermark=watermarks.get(tp), clean_shutdown=clean, clock=self._clock,
                      log4j=self._log4j, epoch_checkpoint_delay=self.epoch_checkpoint_delay,
                      flush_listener=self._flush_listener,
                      line_version=self.manager_config.log_line_version)
            with self._lock:
                if tp in self._logs:
                    log.close(flush=False)
                    raise StorageError(f"Duplicate log directories for {tp} are found in both "
                                       f"{self._logs[tp].dir} and {entry}.")
                self._logs[tp] = log
            self._register_metrics(log)
        clean_file.unlink(missing_ok=True)
        self.logger.info(f"Loaded {len(self.logs_in(log_dir))} logs in {log_dir}")

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        """A damaged checkpoint is not fatal: recovery points fall back to 0 (recover everything), log start
        offsets to the first segment, high watermarks to the log end offset."""
        try:
            return read_offsets_checkpoint(path)
        except StorageError as exc:
            self.logger.warn(f"Ignoring checkpoint file {path}: {exc}")
            return {}

    # -- partitions ---------------------------------------------------------------------------------------------
    def get_log(self, tp: TopicPartition) -> Log | None:
        """The log of ``tp``, if this broker has one."""
        return self._logs.get(tp)

    def all_logs(self) -> dict[TopicPartition, Log]:
        """A snapshot of every log."""
        with self._lock:
            return dict(self._logs)

    def logs_in(self, log_dir: Path) -> list[Log]:
        """The logs stored under ``log_dir``."""
        with self._lock:
            return [log for log in self._logs.values() if log.dir.parent == log_dir]

    def set_topic_config(self, topic: str, overrides: Mapping[str, str]) -> LogConfig:
        """Topic-level overrides for new and existing logs of ``topic`` (existing logs take the new config)."""
        config = self.default_config.with_overrides(overrides)
        with self._lock:
            self._topic_configs[topic] = config
            for tp, log in self._logs.items():
                if tp.topic == topic:
                    log.config = config
        return config

    def topic_config(self, topic: str) -> LogConfig:
        """The effective config of ``topic``."""
        return self._topic_configs.get(topic, self.default_config)

    def get_or_create_log(self, tp: TopicPartition) -> Log:
        """The log of ``tp``, created empty in the log dir holding the fewest partitions if missing.

        A log that cannot be created (no descriptor left, disk full, a file in the way) leaves no directory behind:
        a half-made partition directory would be loaded as a partition at the next start.

        Raises:
            ValueError: an illegal topic name or negative partition.
            StorageError: the log could not be created (Kafka's "Error while creating log for ...").
        """
        validate_topic_name(tp.topic)
        if tp.partition < 0:
            raise ValueError(f"Partition {tp.partition} of {tp.topic} is negative")
        with self._lock:
            log = self._logs.get(tp)
            if log is not None:
                return log
            counts = dict.fromkeys(self.log_dirs, 0)
            for existing in self._logs.values():
                counts[existing.dir.parent] = counts.get(existing.dir.parent, 0) + 1
            target = min(self.log_dirs, key=lambda d: counts[d])
            directory = target / str(tp)
            fresh = not directory.exists()
            try:
                log = Log(directory, tp, self._topic_configs.get(tp.topic, self.default_config),
                          clock=self._clock, log4j=self._log4j, epoch_checkpoint_delay=self.epoch_checkpoint_delay,
                          flush_listener=self._flush_listener,
                          line_version=self.manager_config.log_line_version)
            except (OSError, LogError) as exc:
                if fresh:
                    self._remove_new_dir(directory)
                raise StorageError(f"Error while creating log for {tp} in dir {target}: {exc}") from exc
            self._logs[tp] = log
        self._register_metrics(log)
        properties = ", ".join(f"{k} -> {v}" for k, v in sorted(log.config.to_topic_configs().items()))
        self.logger.info(f"Created log for partition {tp} in {log.dir} with properties {{{properties}}}.")
        return log

    def _remove_new_dir(self, directory: Path) -> None:
        """Remove a partition directory whose log could not be created: ``rmdir`` first, which needs no descriptor
        (running out of them is the usual reason), then a full removal of whatever the failed load left in it."""
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            self.logger.error(f"Could not remove {directory} after failing to create its log; it is loaded as a "
                              f"partition at the next start unless removed")

    def truncate_to(self, tp: TopicPartition, offset: int) -> bool:
        """Follower truncation of ``tp``, then the recovery-point checkpoint of its dir (as Kafka's
        ``LogManager.truncateTo``), so a crash cannot trust a recovery point above the new log end offset.

        Raises:
            KeyError: no log for ``tp``.
        """
        log = self._logs.get(tp)
        if log is None:
            raise KeyError(f"No log for partition {tp}")
        truncated = log.truncate_to(offset)
        if truncated:
            self._checkpoint_recovery_points_in(log.dir.parent)
        return truncated

    def delete_log(self, tp: TopicPartition) -> bool:
        """Close and delete the log of ``tp`` (renamed ``<tp>.<id>-delete`` first, as Kafka); False if absent."""
        with self._lock:
            log = self._logs.pop(tp, None)
        if log is None:
            return False
        if self.metrics is not None:
            for name in _LOG_GAUGES:
                self.metrics.remove(MetricName.of("kafka.log", "Log", name, topic=tp.topic, partition=tp.partition))
        log.close(flush=False)
        doomed = log.dir.with_name(f"{tp}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.replace(log.dir, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        self.logger.info(f"Deleted log for partition {tp} in {log.dir}.")
        return True

    def _register_metrics(self, log: Log) -> None:
        """Kafka's per-partition gauges ``kafka.log:type=Log,name=<N>,topic=<T>,partition=<P>``."""
        if self.metrics is None:
            return
        tp = log.topic_partition
        values: dict[str, Callable[[], float]] = {
            "NumLogSegments": lambda: len(log.segments),
            "LogStartOffset": lambda: log.log_start_offset,
            "LogEndOffset": lambda: log.log_end_offset,
            "Size": lambda: log.size_bytes,
        }
        for name in _LOG_GAUGES:
            self.metrics.gauge(MetricName.of("kafka.log", "Log", name, topic=tp.topic, partition=tp.partition),
                               values[name])

    # -- background work ----------------------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """Retention over every log; returns the number of segments deleted."""
        total = 0
        for log in self.all_logs().values():
            try:
                total += log.delete_old_segments()
            except LogError as exc:
                self.logger.error(f"Error while deleting old segments of {log.topic_partition}: {exc}")
        return total

    def flush_dirty_logs(self) -> None:
        """The ``flush.ms`` policy over every log."""
        for log in self.all_logs().values():
            try:
                log.flush_if_due()
            except LogError as exc:
                self.logger.error(f"Error flushing topic {log.topic_partition}: {exc}")

    def checkpoint_recovery_points(self) -> None:
        """Write ``recovery-point-offset-checkpoint`` (and the high watermarks) in every log dir."""
        for log_dir in self.log_dirs:
            self._checkpoint_recovery_points_in(log_dir)

    def _checkpoint_recovery_points_in(self, log_dir: Path) -> None:
        with self._checkpoint_lock:
            logs = [log for log in self.logs_in(log_dir) if not log.closed]
            write_offsets_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT,
                                     {log.topic_partition: log.recovery_point for log in logs})
            write_offsets_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT,
                                     {log.topic_partition: log.high_watermark for log in logs})

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint`` in every log dir (only offsets above the first segment's base)."""
        for log_dir in self.log_dirs:
            logs = [log for log in self.logs_in(log_dir) if not log.closed]
            with self._checkpoint_lock:
                write_offsets_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT, {
                    log.topic_partition: log.log_start_offset for log in logs
                    if log.log_start_offset > log.segments[0].base_offset})

    def start(self) -> None:
        """Start the background thread (retention, flush.ms, checkpoints, closing deleted segments)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="kafka-log-scheduler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cfg = self.manager_config
        tasks: list[tuple[int, Callable[[], object]]] = [
            (cfg.retention_check_interval_ms, self.cleanup_logs),
            (cfg.flush_scheduler_interval_ms, self.flush_dirty_logs),
            (cfg.recovery_point_checkpoint_interval_ms, self.checkpoint_recovery_points),
            (cfg.log_start_offset_checkpoint_interval_ms, self.checkpoint_log_start_offsets),
        ]
        due = [self._clock() + interval for interval, _ in tasks]
        while not self._stop.wait(SCHEDULER_TICK_S):
            now = self._clock()
            for i, (interval, task) in enumerate(tasks):
                if now >= due[i]:
                    due[i] = now + interval
                    try:
                        task()
                    except Exception:  # loop-level catch-all (Kafka's scheduler too): log it, keep the thread
                        self.logger.error(f"Uncaught exception in scheduled task '{task.__name__}'", exc_info=True)
            for log in self.all_logs().values():
                log.close_retired_segments(now)

    def shutdown(self) -> None:
        """Stop the thread, flush and close every log, write the checkpoints and the clean-shutdown markers."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.logger.info("Shutting down.")
        logs = self.all_logs().values()
        for log in logs:
            log.flush()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for log in logs:
            log.close(flush=False)
        for log_dir in self.log_dirs:
            (log_dir / CLEAN_SHUTDOWN_FILE).touch()
        self._unlock_dirs()
        self.logger.info("Shutdown complete.")

    def close_without_checkpoint(self) -> None:
        """Close every file without flushing or marking a clean shutdown (tests simulating a crash)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        for log in self.all_logs().values():
            log.close(flush=False)
        self._unlock_dirs()

    def _unlock_dirs(self) -> None:
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds = []
