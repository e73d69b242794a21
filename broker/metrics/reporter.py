"""JSON-lines metrics reporter: every ``metrics.interval.ms`` one line per MBean attribute into ``metrics.dir``.

Line format (one sample per line)::

    {"ts": 1718000000123, "broker_id": 1, "mbean": "kafka.network:type=RequestChannel,name=RequestQueueSize",
     "attribute": "Value", "value": 0.0}

``ts`` is epoch milliseconds of the report; ``value`` is a number or null (NaN/infinite values, e.g.
ControlPlaneNetworkProcessorAvgIdlePercent without a control plane, are written as null so every line is valid JSON).
Files are ``metrics-<epoch ms of first line>.jsonl``; a new file starts when the current one exceeds
``metrics.file.roll.bytes`` or is older than ``metrics.file.roll.ms``. A line is written whole and flushed per report,
so a reader tailing the directory never sees half a report at rest.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from broker.metrics.registry import MetricsRegistry

__all__ = ["JsonLinesReporter", "format_samples"]

log = logging.getLogger("kafka.metrics.JsonLinesReporter")


def format_samples(registry: MetricsRegistry, broker_id: int, ts_ms: int) -> list[str]:
    """The JSON lines (without newline) for one report (pure)."""
    lines = []
    for name, attribute, value in registry.samples():
        finite = value if not (math.isnan(value) or math.isinf(value)) else None
        lines.append(
            json.dumps(
                {"ts": ts_ms, "broker_id": broker_id, "mbean": name.mbean, "attribute": attribute, "value": finite},
                separators=(",", ":"),
            )
        )
    return lines


class JsonLinesReporter:
    """A daemon thread writing :func:`format_samples` into rolled files; ``report()`` may also be called directly."""

    def __init__(
        self,
        registry: MetricsRegistry,
        directory: Path,
        broker_id: int,
        interval_ms: int,
        roll_bytes: int,
        roll_ms: int,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._registry = registry
        self._dir = Path(directory)
        self._broker_id = broker_id
        self._interval = interval_ms / 1000.0
        self._roll_bytes = roll_bytes
        self._roll_ms = roll_ms
        self._wall = wall_clock
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._file_started_ms = 0
        self._file_bytes = 0
        self._thread = threading.Thread(target=self._run, name="metrics-jsonl-reporter", daemon=True)

    @property
    def current_file(self) -> Path | None:
        return None if self._file is None else Path(self._file.name)

    def start(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def _roll_if_needed(self, now_ms: int) -> IO[str]:
        if self._file is not None and (
            self._file_bytes >= self._roll_bytes or now_ms - self._file_started_ms >= self._roll_ms
        ):
            self._file.close()
            self._file = None
        if self._file is None:
            path = self._dir / f"metrics-{now_ms}.jsonl"
            suffix = 1
            while path.exists():
                path = self._dir / f"metrics-{now_ms}-{suffix}.jsonl"
                suffix += 1
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open across reports
            self._file_started_ms = now_ms
            self._file_bytes = 0
        return self._file

    def report(self) -> int:
        """Write one report now; returns the number of lines written."""
        now_ms = int(self._wall() * 1000)
        lines = format_samples(self._registry, self._broker_id, now_ms)
        text = "".join(line + "\n" for line in lines)
        with self._lock:
            self._dir.mkdir(parents=True, exist_ok=True)
            f = self._roll_if_needed(now_ms)
            f.write(text)
            f.flush()
            self._file_bytes += len(text.encode())
        return len(lines)

    def _run(self) -> None:
        while True:
            try:
                self.report()
            except Exception:
                log.exception("Failed to write metrics to %s", self._dir)
            if self._stop.wait(self._interval):
                return

    def shutdown(self) -> None:
        """Stop the thread, write a last report, close the file."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        try:
            self.report()
        except Exception:
            log.exception("Failed to write final metrics to %s", self._dir)
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
