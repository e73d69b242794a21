"""Start a controller and N brokers as separate processes on 127.0.0.1, describe them in ``DIR/cluster.json``.

Layout under ``DIR``::

    controller/           controller-state.json, logs/ (controller.log, state-change.log), metrics/, port
    broker-N/server.properties, data/ (log.dirs), logs/ (server.log, state-change.log, ...), metrics/, stdout.log
    cluster.json          {"bootstrap.servers", "brokers": [{"id", "pid", "listeners", "log_dir", "logs_dir",
                           "metrics_dir", "prometheus"}], "controller": {"pid", "url", "logs_dir", "metrics_dir"}}

Ports: ``base_port`` 0 picks free ports below the ephemeral range (:data:`PORT_RANGE`; a broker whose first start
finds a port taken gets new ones); otherwise the controller listens on ``base_port`` and broker ``i`` on
``base_port + 10 * i + {1: PLAINTEXT, 2: CONTROLLER, 3: Prometheus}``. Every process is a child of the launcher
(same process group): :meth:`Cluster.stop` sends SIGTERM and then SIGKILL after a grace period.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.cluster.http import ControllerClient
from broker.lifecycle import BROKER_STARTED, child_env

__all__ = ["Cluster", "ClusterSpec", "free_port"]

# How long start-up may take before the launcher gives up (Python start-up + log recovery on a loaded laptop).
START_TIMEOUT_S = 60.0
# SIGTERM -> SIGKILL grace period per process.
STOP_GRACE_S = 10.0


# Where the launcher's ports come from: below Linux's ephemeral range (net.ipv4.ip_local_port_range starts at 32768),
# so no outgoing connection on the machine (Spark, clients, a shipper) can take a port between the pick and the bind.
PORT_RANGE = (20_000, 32_768)
# How many times a first start re-picks a broker's ports after its bind failed (another picker took one first).
BIND_ATTEMPTS = 3
# The lines of a process's stdout.log quoted in the error when it exits during start-up.
STDOUT_TAIL_LINES = 20


def free_port() -> int:
    """A port free on 127.0.0.1 right now, from :data:`PORT_RANGE` (an ephemeral one if none of a few tries is)."""
    for _ in range(50):
        port = random.randrange(*PORT_RANGE)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _output(path: Path, since: int = 0) -> str:
    """What `path` holds after byte `since` (the start of the process's own output)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(since)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(path: Path, since: int = 0) -> str:
    """The last lines of `path` written after byte `since`."""
    return "\n".join(_output(path, since).splitlines()[-STDOUT_TAIL_LINES:])


class _BindFailed(RuntimeError):
    """A broker exited at start-up because one of its ports was taken."""


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """What to start."""

    directory: Path
    brokers: int = 3
    base_port: int = 0
    fetcher_model: str = "locked"
    cached_update_metadata: bool = True
    controller_control_listener: bool = True  # the controller side of KIP-291 (control.plane.listener.name set)
    brokers_advertise_control: bool = True  # the broker side (a CONTROLLER listener advertised)
    session_timeout_ms: int = 3000
    replica_lag_time_max_ms: int = 10_000
    checkpoint_delay_ms: int = 0
    extra: dict[str, str] = field(default_factory=dict)  # more broker properties


@dataclass
class _Proc:
    popen: subprocess.Popen[bytes]
    out: Any
    since: int = 0  # where this process's output begins in its stdout.log (earlier runs' output comes before)


class Cluster:
    """A running (or stopped) cluster; see the module docstring."""

    def __init__(self, spec: ClusterSpec) -> None:
        if spec.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.spec = spec
        self.dir = Path(spec.directory).resolve()
        self.controller: _Proc | None = None
        self.controller_url = ""
        self.brokers: dict[int, _Proc] = {}
        self.ports: dict[int, dict[str, int]] = {}

    # -------------------------------------------------------------------------------------------------- config
    def _port(self, broker_id: int, slot: int) -> int:
        if self.spec.base_port:
            return self.spec.base_port + 10 * broker_id + slot
        taken = {p for ports in self.ports.values() for p in ports.values()}
        if self.controller_url:
            taken.add(int(self.controller_url.rsplit(":", 1)[1]))
        while (port := free_port()) in taken:  # the kernel may hand the same free port out twice in a row
            pass
        return port

    def broker_dir(self, broker_id: int) -> Path:
        """``DIR/broker-N``."""
        return self.dir / f"broker-{broker_id}"

    def _properties(self, broker_id: int) -> str:
        ports = self.ports.setdefault(broker_id, {"PLAINTEXT": self._port(broker_id, 1),
                                                  "CONTROLLER": self._port(broker_id, 2),
                                                  "prometheus": self._port(broker_id, 3)})
        d = self.broker_dir(broker_id)
        names = ["PLAINTEXT"] + (["CONTROLLER"] if self.spec.brokers_advertise_control else [])
        listeners = ",".join(f"{n}://127.0.0.1:{ports[n]}" for n in names)
        props = {
            "broker.id": str(broker_id), "listeners": listeners, "advertised.listeners": listeners,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(d / "data"), "kafka.logs.dir": str(d / "logs"), "metrics.dir": str(d / "metrics"),
            "prometheus.port": str(ports["prometheus"]), "cluster.id": "planewatch-cluster",
            "planewatch.controller.url": self.controller_url, "replica.fetcher.model": self.spec.fetcher_model,
            "replica.lag.time.max.ms": str(self.spec.replica_lag_time_max_ms),
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",  # as Kafka's sample server.properties
            "metrics.interval.ms": "5000",
            "log.flush.offset.checkpoint.interval.ms": "1000",  # high watermarks survive a kill -9 (>= 1 s old)
        }
        if self.spec.brokers_advertise_control:
            props["control.plane.listener.name"] = "CONTROLLER"
        if self.spec.checkpoint_delay_ms:
            props["planewatch.leader.epoch.checkpoint.delay.ms"] = str(self.spec.checkpoint_delay_ms)
        props.update(self.spec.extra)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    # -------------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the controller, then every broker; write cluster.json. Raises RuntimeError on a failed start."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.start_controller()
        for bid in range(1, self.spec.brokers + 1):
            self.start_broker(bid, wait=False)
        for bid in range(1, self.spec.brokers + 1):
            for attempt in range(1, BIND_ATTEMPTS + 1):
                try:
                    self._await_broker(bid)
                    break
                except _BindFailed:
                    if self.spec.base_port or attempt == BIND_ATTEMPTS:
                        raise
                    self.brokers[bid].out.close()
                    del self.ports[bid]  # pick new ones
                    self.start_broker(bid, wait=False)
        self.write_json()

    def start_controller(self) -> None:
        """(Re)start the controller process and wait for its port."""
        cdir = self.dir / "controller"
        cdir.mkdir(parents=True, exist_ok=True)
        port_file = cdir / "port"
        port = self.spec.base_port if self.spec.base_port else free_port()
        if self.controller_url:  # a restart keeps the URL the brokers know
            port = int(self.controller_url.rsplit(":", 1)[1])
        port_file.unlink(missing_ok=True)
        out = open(cdir / "stdout.log", "ab")  # noqa: SIM115 - closed in stop()
        cmd = [sys.executable, "-m", "broker.cluster.controller_main", "--dir", str(cdir), "--port", str(port),
               "--session-timeout-ms", str(self.spec.session_timeout_ms),
               "--update-metadata-cached", "true" if self.spec.cached_update_metadata else "false",
               "--control-plane-listener", "CONTROLLER" if self.spec.controller_control_listener else ""]
        self.controller = _Proc(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=child_env()), out)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not port_file.exists():
            if self.controller.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the controller did not start; see {cdir / 'stdout.log'}; its last lines:\n"
                                   f"{_tail(cdir / 'stdout.log')}")
            time.sleep(0.05)
        self.controller_url = f"http://127.0.0.1:{int(port_file.read_text())}"

    def start_broker(self, broker_id: int, wait: bool = True) -> None:
        """(Re)start one broker process."""
        d = self.broker_dir(broker_id)
        d.mkdir(parents=True, exist_ok=True)
        props = d / "server.properties"
        props.write_text(self._properties(broker_id))
        out = open(d / "stdout.log", "ab")  # noqa: SIM115 - closed in stop()
        since = out.tell()
        cmd = [sys.executable, "-m", "broker.cluster.node", "--config", str(props)]
        self.brokers[broker_id] = _Proc(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=child_env()),
                                        out, since)
        if wait:
            self._await_broker(broker_id)
            self.write_json()

    def _await_broker(self, broker_id: int) -> None:
        proc = self.brokers[broker_id]
        deadline = time.monotonic() + START_TIMEOUT_S
        client = ControllerClient(self.controller_url, timeout_s=5)
        while True:
            log = self.broker_dir(broker_id) / "stdout.log"
            if proc.popen.poll() is not None:
                tail = _tail(log, proc.since)
                error = _BindFailed if "Address already in use" in tail else RuntimeError
                raise error(f"broker {broker_id} exited; see {log}; its last lines:\n{tail}")
            try:
                # registered, and past its start-up (its metrics port is bound after it registers)
                started = BROKER_STARTED.format(broker_id) in _output(log, proc.since)
                if started and str(broker_id) in client.status()["brokers"]:
                    return
            except (OSError, ConnectionError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {broker_id} did not register within {START_TIMEOUT_S} s")
            time.sleep(0.1)

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a broker (default kill -9) and reap it."""
        proc = self.brokers[broker_id]
        if proc.popen.poll() is None:
            proc.popen.send_signal(sig)
            try:
                proc.popen.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(STOP_GRACE_S)
        proc.out.close()

    def kill_controller(self, sig: int = signal.SIGKILL) -> None:
        """Stop the controller process (default kill -9)."""
        if self.controller is not None and self.controller.popen.poll() is None:
            self.controller.popen.send_signal(sig)
            self.controller.popen.wait(STOP_GRACE_S)
        if self.controller is not None:
            self.controller.out.close()

    def stop(self) -> None:
        """SIGTERM every broker, then the controller; SIGKILL what does not exit within the grace period."""
        for proc in self.brokers.values():
            if proc.popen.poll() is None:
                proc.popen.terminate()
        for bid in list(self.brokers):
            self.kill_broker(bid, signal.SIGTERM)
        self.kill_controller(signal.SIGTERM)

    # -------------------------------------------------------------------------------------------------- description
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:p1,...`` over the PLAINTEXT listeners."""
        return ",".join(f"127.0.0.1:{self.ports[b]['PLAINTEXT']}" for b in sorted(self.brokers))

    def describe(self) -> dict[str, Any]:
        """The content of cluster.json."""
        brokers = []
        for bid in sorted(self.brokers):
            d = self.broker_dir(bid)
            ports = self.ports[bid]
            listeners = {"PLAINTEXT": f"127.0.0.1:{ports['PLAINTEXT']}"}
            if self.spec.brokers_advertise_control:
                listeners["CONTROLLER"] = f"127.0.0.1:{ports['CONTROLLER']}"
            brokers.append({"id": bid, "pid": self.brokers[bid].popen.pid, "listeners": listeners,
                            "host": "127.0.0.1", "port": ports["PLAINTEXT"],
                            "control_listener": "CONTROLLER" if self.spec.brokers_advertise_control else None,
                            "log_dir": str(d / "data"), "logs_dir": str(d / "logs"),
                            "metrics_dir": str(d / "metrics"),
                            "prometheus": f"http://127.0.0.1:{ports['prometheus']}/metrics",
                            "properties": str(d / "server.properties")})
        cdir = self.dir / "controller"
        return {"bootstrap.servers": self.bootstrap_servers(), "brokers": brokers,
                "controller": {"pid": self.controller.popen.pid if self.controller else None,
                               "url": self.controller_url, "logs_dir": str(cdir / "logs"),
                               "metrics_dir": str(cdir / "metrics"), "state": str(cdir / "controller-state.json")},
                "fetcher_model": self.spec.fetcher_model, "cached_update_metadata": self.spec.cached_update_metadata}

    def write_json(self) -> None:
        """Write ``DIR/cluster.json`` atomically."""
        tmp = self.dir / "cluster.json.tmp"
        tmp.write_text(json.dumps(self.describe(), indent=2) + "\n")
        os.replace(tmp, self.dir / "cluster.json")
