"""rsyslog shipping Kafka's log files into a topic of a logging Kafka cluster, as operators run it: one rsyslogd per
host (its `localHostname` the host's name), imfile tailing the host's Kafka log directory (log4j's rotation
followed, a state file per log in the work directory), omkafka producing each line in the project's template
(conf/rsyslog/planewatch.conf: host, file, offset, line; jobs.sources.envelopes' `rsyslog` envelope).

Each physical line is one record with its own byte offset: imfile's `startmsg.regex` would join a stack trace's
lines, but rsyslog 8.2302 then reports the offset of a record's end, not its start, and two records may share one
(measured), so a line's origin would not be unique; the engine counts a stack-trace line shipped alone as
recognised and unused. Each rsyslogd is a :class:`Child` in its own process
group, its configuration and state under `work/<host>/`; :meth:`RsyslogShipper.kill` (SIGKILL, a crash) and
:meth:`RsyslogShipper.start_host` replay what operators see after a crash: the lines since the last persisted read
position are read and sent again (at least once).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from planewatch.demo.processes import Child

__all__ = ["DRAIN_S", "PERSIST_STATE_LINES", "RsyslogMissing", "RsyslogShipper", "ShipTo", "ShippedHost",
           "cluster_shipper", "rsyslog_config", "rsyslogd", "shipped_host"]

TEMPLATE = Path(__file__).resolve().parents[2] / "conf" / "rsyslog" / "planewatch.conf"
# imfile writes a file's read position to its state file every this many lines (and at a clean stop): a crash
# re-sends at most this many lines per file (at least once; planewatch stores each line once).
PERSIST_STATE_LINES = 100
# librdkafka batches for at most this long before it sends (omkafka's producer; rsyslog's default is 0.5 s).
LINGER_MS = 50
# rsyslogd writes its pid file and stops within this long of SIGTERM.
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
# At the end of a run the shippers get this long to read and send the lines its brokers wrote while stopping (imfile
# reads on inotify at once, omkafka sends within LINGER_MS); then SIGTERM, on which rsyslog drains its queue.
DRAIN_S = 3.0


class RsyslogMissing(RuntimeError):
    """rsyslogd or its omkafka module is not installed."""


def rsyslogd() -> str:
    """rsyslogd's path; :class:`RsyslogMissing` names the fix when it or omkafka is absent."""
    path = shutil.which("rsyslogd") or ("/usr/sbin/rsyslogd" if os.access("/usr/sbin/rsyslogd", os.X_OK) else None)
    if path is None or not list(Path("/usr/lib").glob("*/rsyslog/omkafka.so")) + list(
            Path("/usr/lib/rsyslog").glob("omkafka.so")):
        raise RsyslogMissing("rsyslog with omkafka is not installed: scripts/bootstrap.sh installs Debian's rsyslog "
                             "and rsyslog-kafka")
    return path


@dataclass(frozen=True)
class ShippedHost:
    """A host whose Kafka logs are shipped: its name (the shipper's hostname) and its log directory."""

    name: str
    logs_dir: Path


@dataclass(frozen=True)
class ShipTo:
    """Where a cluster's brokers ship their logs: a logging cluster's `bootstrap` and `topic`; each broker is a host
    named `kafka-<id>.<cluster>` (the `host` mapping preset gives back the cluster and broker)."""

    bootstrap: str
    topic: str
    cluster: str


def shipped_host(ship: ShipTo, broker_id: int, logs_dir: Path) -> ShippedHost:
    """The shipped host of one broker (named as ShipTo says)."""
    return ShippedHost(f"kafka-{broker_id}.{ship.cluster}", logs_dir)


def cluster_shipper(ship: ShipTo, logs_dirs: Mapping[int, Path], work: Path) -> RsyslogShipper:
    """The shippers of a cluster's brokers (broker id -> its log directory), hosts named as `ship` says."""
    hosts = [shipped_host(ship, b, d) for b, d in sorted(logs_dirs.items())]
    return RsyslogShipper(hosts, work, ship.bootstrap, ship.topic)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rsyslog_config(host: ShippedHost, work: Path, bootstrap: str, topic: str,
                   kafka_conf: Mapping[str, str] | None = None) -> str:
    """The rsyslog.conf of one host: the project's template, imfile over its Kafka logs, omkafka to `topic`."""
    conf = {"queue.buffering.max.ms": str(LINGER_MS), "acks": "all", **(kafka_conf or {})}
    params = ", ".join(_quote(f"{k}={v}") for k, v in conf.items())
    brokers = ", ".join(_quote(b) for b in bootstrap.split(","))
    return f"""# rsyslog for {host.name}: {host.logs_dir} -> {topic} (planewatch.kafka.shipper)
global(workDirectory={_quote(str(work))} localHostname={_quote(host.name)} maxMessageSize="1m"
       parser.escapeControlCharactersOnReceive="off")
module(load="imfile" mode="inotify")
module(load="omkafka")
include(file={_quote(str(TEMPLATE))})
ruleset(name="kafka") {{
  action(type="omkafka" broker=[{brokers}] topic={_quote(topic)} template="planewatch" partitions.auto="on"
         dynaKey="on" key="planewatch_key" confParam=[{params}] resubmitOnFailure="on" keepFailedMessages="on"
         failedMsgFile={_quote(str(work / "omkafka-failed.json"))} action.resumeRetryCount="-1"
         action.resumeInterval="1")
}}
input(type="imfile" file={_quote(str(host.logs_dir / "*.log"))} tag="kafka:" addMetadata="on" ruleset="kafka"
      persistStateInterval="{PERSIST_STATE_LINES}" reopenOnTruncate="on")
"""


class RsyslogShipper:
    """One rsyslogd per host (module docstring), started together, stopped whatever happens (context manager)."""

    def __init__(self, hosts: Sequence[ShippedHost], work: Path, bootstrap: str, topic: str,
                 kafka_conf: Mapping[str, str] | None = None) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.work = work
        self.bootstrap = bootstrap
        self.topic = topic
        self.kafka_conf = dict(kafka_conf or {})
        self.children: dict[str, Child] = {}
        self._bin = rsyslogd()

    def __enter__(self) -> RsyslogShipper:
        try:
            for name in self.hosts:
                self.start_host(name)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _dir(self, name: str) -> Path:
        return self.work / name

    def start_host(self, name: str) -> None:
        """Start (or restart) the rsyslogd of host `name`; returns once it runs (its pid file is written)."""
        d = self._dir(name)
        d.mkdir(parents=True, exist_ok=True)
        conf = d / "rsyslog.conf"
        conf.write_text(rsyslog_config(self.hosts[name], d, self.bootstrap, self.topic, self.kafka_conf))
        pid = d / "rsyslogd.pid"
        pid.unlink(missing_ok=True)
        child = Child("shipper", [self._bin, "-n", "-f", str(conf), "-i", str(pid)], d / "rsyslogd.log",
                      dict(os.environ))
        self.children[name] = child
        deadline = time.monotonic() + START_TIMEOUT_S
        while not pid.exists():
            if not child.alive() or time.monotonic() > deadline:
                log = (d / "rsyslogd.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"rsyslogd of {name} did not start: {log}")
            time.sleep(0.1)

    def kill(self, name: str) -> None:
        """SIGKILL the rsyslogd of host `name` (a crash: nothing persisted since its last state write)."""
        child = self.children.pop(name)
        os.killpg(child.proc.pid, signal.SIGKILL)
        child.stop(STOP_TIMEOUT_S)

    def stop(self) -> None:
        """Stop every rsyslogd (SIGTERM: it persists its read positions and drains its queue, then exits)."""
        for name in list(self.children):
            child = self.children.pop(name)
            if child.alive():
                child.proc.send_signal(signal.SIGTERM)
                try:
                    child.proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
            child.stop(STOP_TIMEOUT_S)
