"""Two background threads beside the demo: one points the anchors' Prometheus at the cluster the demo is running,
the other records when each anchor alert became readable in Alertmanager.

:class:`TargetFollower` reads what the demo writes: ``<dir>/current`` links to the running run's cluster directory,
whose ``cluster.json`` names the Prometheus endpoints, and the run's timeline ``<dir>/timeline/<run>.jsonl`` says
``cluster-stopped`` once the scenario has stopped it (a real Kafka's cluster.json also says ``running: false``).
The targets are the running cluster's endpoints, or none between runs: a stopped cluster is taken out of the
targets as an operator decommissions one, so its endpoints going down is not an incident.

:class:`AlertmanagerWatcher` reads GET /api/v2/alerts every second, like the demo's watcher reads planewatch's
GET /alerts: the same resolution on both sides.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.anchors.score import AnchorAlert
from benchmarks.anchors.servers import AnchorServers
from benchmarks.anchors.stacks import ANCHOR_LABEL, STACKS, Stack, Target, scrape_targets
from planewatch.demo.watch import POLL_S as DEMO_POLL_S

__all__ = ["AlertmanagerWatcher", "TargetFollower", "parse_rfc3339_ms"]

# How often Alertmanager is read: the resolution of the anchors' measured delay, the demo watcher's for planewatch.
POLL_S = DEMO_POLL_S
# How often the demo's directory is looked at for a new or stopped cluster.
FOLLOW_S = 0.5
HTTP_TIMEOUT_S = 5.0
_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def parse_rfc3339_ms(text: str) -> int:
    """Milliseconds since the epoch of an RFC 3339 time as Go writes it (up to nanoseconds, ``Z`` or an offset)."""
    return int(datetime.fromisoformat(_FRACTION.sub(r"\1", text, count=1).replace("Z", "+00:00")).timestamp() * 1000)


class _Loop:
    """A daemon thread calling ``step`` every ``period`` seconds until stopped."""

    period = POLL_S

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.last_error: str | None = None

    def start(self) -> _Loop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(HTTP_TIMEOUT_S * 2)

    def step(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
                self.last_error = None
            except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
                self.last_error = f"{type(e).__name__}: {e}"
            self._stop.wait(self.period)


class AlertmanagerWatcher(_Loop):
    """Every anchor alert Alertmanager has listed, each with the time it was first read there."""

    def __init__(self, url: str, stacks: Sequence[Stack] = STACKS) -> None:
        super().__init__("anchor-alert-watcher")
        self.url = url.rstrip("/")
        self._run_label = {s.name: s.run_label for s in stacks}
        self._seen: dict[tuple[str, str], AnchorAlert] = {}
        self._lock = threading.Lock()

    def alerts(self) -> list[AnchorAlert]:
        with self._lock:
            return list(self._seen.values())

    def step(self) -> None:
        now_ms = int(time.time() * 1000)
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=HTTP_TIMEOUT_S) as r:
            listed: list[dict[str, Any]] = json.loads(r.read())
        with self._lock:
            for a in listed:
                key = (str(a["fingerprint"]), str(a["startsAt"]))  # a rule firing again is a new alert
                if key in self._seen:
                    continue
                labels: dict[str, str] = a["labels"]
                stack = labels.get(ANCHOR_LABEL, "?")
                self._seen[key] = AnchorAlert(stack, labels.get("alertname", "?"),
                                              labels.get(self._run_label.get(stack, "")),
                                              parse_rfc3339_ms(a["startsAt"]), now_ms)


class TargetFollower(_Loop):
    """Keeps the anchors' targets on the demo's running cluster (see the module docstring)."""

    period = FOLLOW_S

    def __init__(self, demo_dir: Path, servers: AnchorServers) -> None:
        super().__init__("anchor-target-follower")
        self.demo_dir = demo_dir
        self.servers = servers
        self._current: tuple[str, tuple[Target, ...]] | None = None

    def _running(self) -> tuple[str, tuple[Target, ...]]:
        link = self.demo_dir / "current"
        if not link.is_symlink():
            return "", ()
        run = Path(link.readlink()).parts[1]  # clusters/<run>/cluster
        cluster_json = link / "cluster.json"
        timeline = self.demo_dir / "timeline" / f"{run}.jsonl"
        if not cluster_json.exists() or (timeline.exists() and b'"cluster-stopped"' in timeline.read_bytes()):
            return run, ()
        cluster = json.loads(cluster_json.read_text())
        if cluster.get("running") is False:
            return run, ()
        return run, tuple(scrape_targets(cluster))

    def step(self) -> None:
        now = self._running()
        if now != self._current:
            self.servers.set_targets(now[0], now[1])
            self._current = now
