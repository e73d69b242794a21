"""Alertmanager and one Prometheus per stack, started on 127.0.0.1 from Debian's packages, stopped whatever happens.

Every server gets a free port on 127.0.0.1 (Alertmanager's gossip listener is switched off: it would bind every
interface), its configuration and data in one temporary directory, and its output in a log file. Each runs as a
:class:`planewatch.demo.processes.Child` (its own process group, SIGINT then SIGKILL); :class:`AnchorServers` is a
context manager, so the servers stop on an error or Ctrl-C as on success, and the temporary directory goes with them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from benchmarks.anchors.stacks import STACKS, Stack, Target, alertmanager_config, file_sd, prometheus_config
from planewatch.demo.processes import Child, free_port, wait_http_ok

__all__ = ["AnchorServers", "AnchorsMissing", "binary"]

# Prometheus replays no WAL here (fresh directory); on a loaded 2-core machine it is ready in a few seconds.
START_TIMEOUT_S = 60.0
# Both stop within a second on SIGINT; past this their process group is killed.
STOP_TIMEOUT_S = 10.0
# Debian's package names for the binaries (upstream's tarball calls Alertmanager `alertmanager`).
BINARIES = {"prometheus": ("prometheus",), "alertmanager": ("prometheus-alertmanager", "alertmanager"),
            "promtool": ("promtool",)}


class AnchorsMissing(RuntimeError):
    """Prometheus or Alertmanager is not installed."""


def binary(kind: str) -> str:
    """The path of ``kind`` (prometheus, alertmanager, promtool); :class:`AnchorsMissing` names the fix if absent."""
    for name in BINARIES[kind]:
        path = shutil.which(name)
        if path:
            return path
    raise AnchorsMissing(f"{kind} is not installed: scripts/bootstrap.sh installs Debian's prometheus and "
                         "prometheus-alertmanager")


class AnchorServers:
    """Alertmanager plus one Prometheus per stack on 127.0.0.1 (see the module docstring).

    ``scrape_interval_s`` / ``evaluation_interval_s`` override every stack's own (tests only); ``logs`` is where the
    servers' output goes (default: the temporary directory); ``webhook_url``: Alertmanager notifies it of every
    alert at once (a pager's stand-in that counts pages).
    """

    def __init__(self, stacks: Sequence[Stack] = STACKS, *, logs: Path | None = None,
                 scrape_interval_s: float | None = None, evaluation_interval_s: float | None = None,
                 webhook_url: str | None = None) -> None:
        self.stacks = tuple(stacks)
        self.webhook_url = webhook_url
        self.logs = logs
        self.scrape_interval_s = scrape_interval_s
        self.evaluation_interval_s = evaluation_interval_s
        self.alertmanager_url = ""
        self.prometheus_urls: dict[str, str] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._children: list[Child] = []
        self._targets_files: dict[str, Path] = {}

    def __enter__(self) -> AnchorServers:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _child(self, kind: str, cmd: list[str], ready_url: str) -> None:
        assert self._tmp is not None
        log_dir = self.logs or Path(self._tmp.name)
        child = Child(kind, cmd, log_dir / f"{kind}.log", dict(os.environ))
        self._children.append(child)
        wait_http_ok(ready_url, START_TIMEOUT_S, child)

    def start(self) -> None:
        """Start Alertmanager, then each stack's Prometheus with no targets; return once all answer /-/ready."""
        prometheus, alertmanager = binary("prometheus"), binary("alertmanager")
        self._tmp = tempfile.TemporaryDirectory(prefix="planewatch-anchors-")
        root = Path(self._tmp.name)
        am_dir = root / "alertmanager"
        am_dir.mkdir()
        (am_dir / "alertmanager.yml").write_text(alertmanager_config(self.webhook_url))
        am_port = free_port(0)
        self.alertmanager_url = f"http://127.0.0.1:{am_port}"
        self._child("alertmanager", [alertmanager, f"--config.file={am_dir / 'alertmanager.yml'}",
                                     f"--storage.path={am_dir}", f"--web.listen-address=127.0.0.1:{am_port}",
                                     "--cluster.listen-address=", "--log.level=warn"],
                    f"{self.alertmanager_url}/-/ready")
        for stack in self.stacks:
            d = root / stack.name
            d.mkdir()
            targets = d / "targets.json"
            targets.write_text("[]")
            self._targets_files[stack.name] = targets
            (d / "prometheus.yml").write_text(prometheus_config(
                stack, alertmanager=f"127.0.0.1:{am_port}", targets_file=targets,
                scrape_interval_s=self.scrape_interval_s, evaluation_interval_s=self.evaluation_interval_s))
            port = free_port(0)
            url = f"http://127.0.0.1:{port}"
            self.prometheus_urls[stack.name] = url
            self._child(f"prometheus-{stack.name}", [prometheus, f"--config.file={d / 'prometheus.yml'}",
                                                      f"--storage.tsdb.path={d / 'data'}",
                                                      f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                        f"{url}/-/ready")

    def set_targets(self, run: str, targets: Sequence[Target]) -> None:
        """Make ``targets`` (of cluster ``run``) every stack's only scrape targets (none: scrape nothing)."""
        for stack in self.stacks:
            path = self._targets_files[stack.name]
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(file_sd(stack, run, targets)))
            os.replace(tmp, path)  # Prometheus watches the file: it never sees a half-written one

    def stop(self) -> None:
        """Stop every server (Prometheus first, then Alertmanager) and remove the temporary directory."""
        for child in reversed(self._children):
            child.stop(STOP_TIMEOUT_S)
        self._children.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
