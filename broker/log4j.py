"""Kafka's log4j logging, reproduced: layout, level names and appenders.

Theory of operation
-------------------
Kafka (ZooKeeper mode, 2.x) ships `config/log4j.properties` with four appenders that matter here, all with the
layout ``[%d] %p %m (%c)%n`` (``%d`` = ISO8601 ``2020-03-26 11:38:33,075``, ``%p`` = level, ``%c`` = logger name):

==========================  =======================  ============  ==========  ================================
logger                      file                     level         additivity  notes
==========================  =======================  ============  ==========  ================================
root (``kafka.*`` etc.)     ``server.log``           INFO          -           ``kafkaAppender`` (+ stdout)
``state.change.logger``     ``state-change.log``     INFO (2.6+)   false       TRACE in 2.0-2.5
``kafka.request.logger``    ``kafka-request.log``    WARN          false       DEBUG turns request logging on
``kafka.controller``        ``controller.log``       TRACE         false       the controller's own lines
==========================  =======================  ============  ==========  ================================

Every appender is a ``DailyRollingFileAppender`` with ``DatePattern='.'yyyy-MM-dd-HH``: the first event of a new
hour renames the file to ``<file>.<yyyy-MM-dd-HH of the hour that ended>`` and opens a fresh one. Size-based
rolling (``RollingFileAppender``: ``<file>.1`` ... ``<file>.N``) is available too.

This module keeps its loggers in a **private logging hierarchy** (its own :class:`logging.Manager`), not in Python's
global one: Kafka logger names such as ``kafka.conn`` would otherwise collide with kafka-python's loggers, and two
brokers in one process (tests, ``planewatch cluster``) must write to two log directories. A :class:`Log4j` object
is one such hierarchy; the module-level :func:`configure` / :func:`get_logger` use a process-wide default one.

Level names are Kafka's (``WARN``, not ``WARNING``; ``TRACE`` below ``DEBUG``); Python's global level names are
left untouched.

planewatch choice (documented deviation): :func:`configure` enables ``kafka.request.logger`` at DEBUG by default,
because the analytics read ``kafka-request.log``; pass ``request_log_level="WARN"`` for Kafka's default.
"""

from __future__ import annotations

import logging
import logging.handlers
import math
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CONTROLLER_LOGGER",
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "REQUEST_LOGGER",
    "STATE_CHANGE_LOGGER",
    "TRACE",
    "WARN",
    "DailyRollingFileHandler",
    "KafkaLogger",
    "Log4j",
    "Log4jFormatter",
    "configure",
    "default_log4j",
    "format_timestamp",
    "get_logger",
    "level_from_name",
]

# Kafka's levels on Python's numeric scale. TRACE sits below DEBUG (log4j's TRACE < DEBUG).
TRACE = 5
DEBUG = logging.DEBUG
INFO = logging.INFO
WARN = logging.WARNING
ERROR = logging.ERROR
FATAL = logging.CRITICAL

_LEVEL_NAMES: dict[int, str] = {
    TRACE: "TRACE", DEBUG: "DEBUG", INFO: "INFO", WARN: "WARN", ERROR: "ERROR", FATAL: "FATAL",
}
_NAME_LEVELS: dict[str, int] = {**{v: k for k, v in _LEVEL_NAMES.items()}, "WARNING": WARN, "CRITICAL": FATAL,
                                "ALL": 1, "OFF": FATAL + 10}

# Kafka's logger names (the `%c` of the layout).
STATE_CHANGE_LOGGER = "state.change.logger"
REQUEST_LOGGER = "kafka.request.logger"
CONTROLLER_LOGGER = "kafka.controller"

# log4j.properties file names.
SERVER_LOG = "server.log"
STATE_CHANGE_LOG = "state-change.log"
REQUEST_LOG = "kafka-request.log"
CONTROLLER_LOG = "controller.log"

# DailyRollingFileAppender DatePattern '.'yyyy-MM-dd-HH (hourly), as Kafka's log4j.properties sets it.
HOURLY_DATE_PATTERN = "%Y-%m-%d-%H"
# RollingFileAppender defaults when size rolling is chosen without numbers (log4j: MaxFileSize=10MB, MaxBackupIndex=1).
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_BACKUP_INDEX = 1


def level_from_name(name: str) -> int:
    """Map a log4j level name (``TRACE``, ``DEBUG``, ``INFO``, ``WARN``, ``ERROR``, ``FATAL``, ``OFF``) to a number.

    Raises:
        ValueError: for an unknown name.
    """
    try:
        return _NAME_LEVELS[name.strip().upper()]
    except KeyError:
        raise ValueError(f"unknown log4j level {name!r}; expected one of {sorted(_NAME_LEVELS)}") from None


def format_timestamp(epoch_seconds: float, *, utc: bool = False) -> str:
    """log4j ISO8601 date: ``2020-03-26 11:38:33,075`` (local time, as the JVM's default time zone)."""
    tm = time.gmtime(epoch_seconds) if utc else time.localtime(epoch_seconds)
    millis = int((epoch_seconds - math.floor(epoch_seconds)) * 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", tm) + f",{millis:03d}"


class Log4jFormatter(logging.Formatter):
    """The PatternLayout ``[%d] %p %m (%c)%n`` (the ``%n`` is added by the stream handler)."""

    def __init__(self, *, utc: bool = False) -> None:
        super().__init__()
        self._utc = utc

    def format(self, record: logging.LogRecord) -> str:
        level = _LEVEL_NAMES.get(record.levelno, record.levelname)
        line = f"[{format_timestamp(record.created, utc=self._utc)}] {level} {record.getMessage()} ({record.name})"
        if record.exc_info:
            # log4j's PatternLayout ignores the throwable; the appender prints the stack trace after the line.
            if not record.exc_text:
                record.exc_text = self.formatException(record.exc_info)
            line = line + "\n" + record.exc_text
        return line


class DailyRollingFileHandler(logging.FileHandler):
    """log4j's DailyRollingFileAppender: roll when the period (``date_pattern``) of the event differs from the file's.

    The rolled file is named ``<file>.<period of the file's content>`` (``state-change.log.2024-05-10-09``); a file
    that already exists at start-up takes the period of its last modification, as log4j does. Times are local.
    """

    def __init__(self, filename: str | os.PathLike[str], date_pattern: str = HOURLY_DATE_PATTERN,
                 *, utc: bool = False) -> None:
        super().__init__(os.fspath(filename), mode="a", encoding="utf-8", delay=False)
        self.date_pattern = date_pattern
        self._utc = utc
        path = Path(self.baseFilename)
        start = path.stat().st_mtime if path.exists() else time.time()
        self._period = self._period_of(start)

    def _period_of(self, epoch_seconds: float) -> str:
        tm = time.gmtime(epoch_seconds) if self._utc else time.localtime(epoch_seconds)
        return time.strftime(self.date_pattern, tm)

    def emit(self, record: logging.LogRecord) -> None:
        period = self._period_of(record.created)
        if period != self._period:
            try:
                self._roll(self._period)
            except OSError:
                self.handleError(record)
            self._period = period
        super().emit(record)

    def _roll(self, period: str) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        target = f"{self.baseFilename}.{period}"
        if os.path.exists(target):  # log4j deletes an existing target before renaming
            os.remove(target)
        if os.path.exists(self.baseFilename):
            os.rename(self.baseFilename, target)
        self.stream = self._open()


@dataclass(frozen=True)
class _Route:
    logger: str
    filename: str
    level: int
    additive: bool


_NEW_RECORD = logging.LogRecord.__new__
_START = time.time()


def _record(name: str, level: int, msg: str) -> logging.LogRecord:
    """A LogRecord with what the handlers and formatters here (and Python's default ones) read; no stack walk."""
    now = time.time()
    record: logging.LogRecord = _NEW_RECORD(logging.LogRecord)
    record.name, record.msg, record.args = name, msg, None
    record.levelno, record.levelname = level, _LEVEL_NAMES.get(level, str(level))
    record.created, record.msecs = now, (now - int(now)) * 1000.0
    record.relativeCreated = (now - _START) * 1000.0
    record.exc_info, record.exc_text, record.stack_info = None, None, None
    record.pathname, record.filename, record.module, record.lineno, record.funcName = "", "", "", 0, ""
    current = threading.current_thread()
    record.thread, record.threadName = current.ident, current.name
    record.process, record.processName = None, None
    record.taskName = None
    return record


class KafkaLogger:
    """A logger with Kafka's ``Logging`` trait: an optional ``logIdent`` prefix and Kafka's level methods.

    Build expensive messages only after ``is_trace_enabled()`` / ``is_debug_enabled()`` says so.
    """

    __slots__ = ("ident", "logger")

    def __init__(self, logger: logging.Logger, ident: str = "") -> None:
        self.logger = logger
        self.ident = ident

    @property
    def name(self) -> str:
        """The logger name (log4j ``%c``)."""
        return self.logger.name

    def with_ident(self, ident: str) -> KafkaLogger:
        """The same logger with another ``logIdent`` (e.g. ``"[Broker id=1] "``)."""
        return KafkaLogger(self.logger, ident)

    def is_enabled(self, level: int) -> bool:
        """True when an event at ``level`` would be written."""
        return self.logger.isEnabledFor(level)

    def is_trace_enabled(self) -> bool:
        """True when TRACE events are written."""
        return self.logger.isEnabledFor(TRACE)

    def is_debug_enabled(self) -> bool:
        """True when DEBUG events are written."""
        return self.logger.isEnabledFor(DEBUG)

    def log(self, level: int, msg: str, *, exc_info: bool = False) -> None:
        """Write ``ident + msg`` at ``level`` (the message is taken verbatim: no %-formatting)."""
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        if exc_info:
            logger.log(level, "%s", self.ident + msg, exc_info=True)
        else:
            # The per-partition state-change lines come by the thousand per request: skip LogRecord.__init__'s
            # caller lookup (findCaller walks the stack) and build the few fields the layout uses.
            logger.handle(_record(logger.name, level, self.ident + msg))

    def trace(self, msg: str) -> None:
        """TRACE."""
        self.log(TRACE, msg)

    def debug(self, msg: str) -> None:
        """DEBUG."""
        self.log(DEBUG, msg)

    def info(self, msg: str) -> None:
        """INFO."""
        self.log(INFO, msg)

    def warn(self, msg: str) -> None:
        """WARN."""
        self.log(WARN, msg)

    def error(self, msg: str, *, exc_info: bool = False) -> None:
        """ERROR (with the current exception's stack trace when ``exc_info``)."""
        self.log(ERROR, msg, exc_info=exc_info)

    def fatal(self, msg: str) -> None:
        """FATAL."""
        self.log(FATAL, msg)


class Log4j:
    """One private logging hierarchy with Kafka's appenders (see the module docstring).

    A fresh object writes nothing until :meth:`configure` attaches appenders; loggers taken from it before that
    keep working afterwards.
    """

    def __init__(self) -> None:
        self._root = logging.RootLogger(INFO)
        self._root.addHandler(logging.NullHandler())  # never fall back to Python's lastResort stderr handler
        self._manager = logging.Manager(self._root)
        self._handlers: list[logging.Handler] = []
        self._lock = threading.Lock()
        self.logs_dir: Path | None = None

    def get_logger(self, name: str, ident: str = "") -> KafkaLogger:
        """The logger named ``name`` (a Kafka logger name: ``state.change.logger``, ``kafka.server.KafkaApis``...)."""
        return KafkaLogger(self._manager.getLogger(name), ident)

    def configure(
        self,
        logs_dir: str | os.PathLike[str],
        *,
        root_level: str = "INFO",
        state_change_level: str = "INFO",
        request_log_level: str = "DEBUG",
        controller_level: str = "TRACE",
        controller_log: bool = False,
        roll: str = "time",
        date_pattern: str = HOURLY_DATE_PATTERN,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_backup_index: int = DEFAULT_MAX_BACKUP_INDEX,
        stdout: bool = False,
        levels: Mapping[str, str] | None = None,
        utc: bool = False,
    ) -> Log4j:
        """Attach Kafka's appenders, writing into ``logs_dir`` (created if missing); replaces earlier appenders.

        Args:
            logs_dir: ``${kafka.logs.dir}``.
            root_level: level of the root logger (server.log).
            state_change_level: ``state.change.logger`` level (INFO as 2.6+, TRACE as 2.0-2.5 and the controller).
            request_log_level: ``kafka.request.logger`` level (DEBUG writes the request log; WARN = Kafka's default).
            controller_level: ``kafka.controller`` level.
            controller_log: also create ``controller.log`` (the controller side).
            roll: ``"time"`` (DailyRollingFileAppender, ``date_pattern``) or ``"size"`` (RollingFileAppender).
            date_pattern: strftime pattern of the rolled files' suffix (default hourly ``%Y-%m-%d-%H``).
            max_file_bytes: size rolling threshold.
            max_backup_index: size rolling: how many ``.N`` files to keep.
            stdout: also write the root logger's events to stdout (Kafka's ``stdout`` appender).
            levels: extra ``logger name -> level name`` settings (log4j ``log4j.logger.X=LEVEL``).
            utc: use UTC instead of local time for ``%d`` and the roll periods.

        Raises:
            ValueError: for an unknown level name, roll kind or a non-positive size.
        """
        if roll not in ("time", "size"):
            raise ValueError(f"roll must be 'time' or 'size', not {roll!r}")
        if roll == "size" and (max_file_bytes <= 0 or max_backup_index < 0):
            raise ValueError("size rolling needs max_file_bytes > 0 and max_backup_index >= 0")
        routes = [
            _Route("", SERVER_LOG, level_from_name(root_level), True),
            _Route(STATE_CHANGE_LOGGER, STATE_CHANGE_LOG, level_from_name(state_change_level), False),
            _Route(REQUEST_LOGGER, REQUEST_LOG, level_from_name(request_log_level), False),
        ]
        if controller_log:
            routes.append(_Route(CONTROLLER_LOGGER, CONTROLLER_LOG, level_from_name(controller_level), False))
        extra = {name: level_from_name(lvl) for name, lvl in (levels or {}).items()}
        directory = Path(logs_dir)
        directory.mkdir(parents=True, exist_ok=True)
        formatter = Log4jFormatter(utc=utc)
        with self._lock:
            self._detach()
            self.logs_dir = directory
            for route in routes:
                handler: logging.Handler
                path = directory / route.filename
                if roll == "time":
                    handler = DailyRollingFileHandler(path, date_pattern, utc=utc)
                else:
                    handler = logging.handlers.RotatingFileHandler(
                        path, maxBytes=max_file_bytes, backupCount=max_backup_index, encoding="utf-8")
                handler.setFormatter(formatter)
                target = self._root if route.logger == "" else self._manager.getLogger(route.logger)
                target.setLevel(route.level)
                target.propagate = route.additive
                target.addHandler(handler)
                self._handlers.append(handler)
            if stdout:
                console = logging.StreamHandler(sys.stdout)
                console.setFormatter(formatter)
                self._root.addHandler(console)
                self._handlers.append(console)
            for name, lvl in extra.items():
                self._manager.getLogger(name).setLevel(lvl)
        return self

    def set_level(self, name: str, level: str) -> None:
        """``log4j.logger.<name>=<level>`` at run time (e.g. ``set_level("kafka.server.ReplicaManager", "DEBUG")``).

        Raises:
            ValueError: for an unknown level name.
        """
        self._manager.getLogger(name).setLevel(level_from_name(level))

    def flush(self) -> None:
        """Flush every appender."""
        for handler in list(self._handlers):
            handler.flush()

    def close(self) -> None:
        """Detach and close every appender (loggers stay usable and write nothing)."""
        with self._lock:
            self._detach()

    def _detach(self) -> None:
        for handler in self._handlers:
            for logger in [self._root, *self._manager.loggerDict.values()]:
                if isinstance(logger, logging.Logger) and handler in logger.handlers:
                    logger.removeHandler(handler)
            handler.close()
        self._handlers.clear()


_DEFAULT = Log4j()


def default_log4j() -> Log4j:
    """The process-wide hierarchy that :func:`configure` and :func:`get_logger` use."""
    return _DEFAULT


def get_logger(name: str, ident: str = "") -> KafkaLogger:
    """A logger of the process-wide hierarchy (see :class:`Log4j`)."""
    return _DEFAULT.get_logger(name, ident)


def configure(logs_dir: str | os.PathLike[str], **options: Any) -> Log4j:
    """Attach Kafka's appenders to the process-wide hierarchy; see :meth:`Log4j.configure` for the options."""
    return _DEFAULT.configure(logs_dir, **options)
