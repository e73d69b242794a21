"""Apache Kafka on 127.0.0.1 from the Maven-fetched jars: ZooKeeper mode (below 4.0) or KRaft (4.x, or 3.x asked).

Layout under ``DIR`` (the one the pipeline reads: ``broker-<id>`` directories hold a broker's logs)::

    zookeeper/            zookeeper.properties, data/, zookeeper.log, zookeeper.out      (ZooKeeper mode)
    controller-<id>/      server.properties, log4j config, data/, logs/, kafkaServer.out   (KRaft quorum)
    broker-<id>/          server.properties, log4j config, data/, logs/ (server.log, state-change.log,
                          controller.log, kafka-request.log), kafkaServer.out (the JVM's console, as
                          kafka-server-start.sh names it)
    jmx-exporter.yaml     the agent's rules (kafka-2_0_0 names, the reference broker's table)
    cluster.json          the reference cluster's contract (bootstrap.servers; per broker id, pid, listeners, host,
                          port, control_listener, log_dir, logs_dir, metrics_dir, prometheus) + engine, kafka_version,
                          mode, zookeeper / controllers

Every process is ``java -cp <set> kafka.Kafka server.properties`` (ZooKeeper's ``ZooKeeperServerMain``), started
with a parent-death signal so that none outlives the launcher, and stopped by :meth:`KafkaCluster.stop` (SIGTERM,
then SIGKILL after a grace period). A node that fails to start raises :class:`KafkaStartError` naming it and the
reason Kafka logged; the nodes already started are stopped first.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from broker.cluster.launcher import free_port
from broker.lifecycle import die_with_parent
from planewatch.kafka import artifacts, configs
from planewatch.kafka.exporters import DEFAULT_EXPORTER, EXPORTERS, exporter_yaml

if TYPE_CHECKING:
    from planewatch.kafka.shipper import ShipTo

__all__ = ["KafkaCluster", "KafkaClusterSpec", "KafkaSetup", "KafkaStartError", "free_port"]

# How often planewatch scrapes Apache Kafka's JMX exporters unless told: the reference brokers' metrics interval,
# not the trigger (a 3-broker KRaft cluster answers ~2,000 samples a scrape). Operators scrape every 15-60 s.
SCRAPE_INTERVAL_S = 5.0
# A broker JVM here needs ~200 MB live heap under the scenarios' load; 512 MB leaves room without crowding Spark.
BROKER_HEAP = "-Xms256m -Xmx512m"
CONTROLLER_HEAP = "-Xms128m -Xmx256m"
ZOOKEEPER_HEAP = "-Xms64m -Xmx128m"
# 2 cores shared by 3-4 JVMs, Spark and the API: one GC worker and two JIT compiler threads per JVM.
JVM_FLAGS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:ParallelGCThreads=1", "-XX:ConcGCThreads=1",
             "-XX:CICompilerCount=2", "-Djava.awt.headless=true")
# A JVM start plus log recovery plus joining the cluster, on a loaded 2-core machine.
START_TIMEOUT_S = 120.0
# SIGTERM -> SIGKILL: a controlled shutdown moves leadership away first (Kafka's default waits up to 30 s a retry).
STOP_GRACE_S = 30.0
_STARTED = re.compile(r"\[KafkaServer id=\d+\] started|Kafka Server started|\[KafkaRaftServer nodeId=\d+\] Kafka")
_FATAL = re.compile(r"\b(ERROR|FATAL)\b.*")
# A Java exception's message line: "org.apache.kafka.common.KafkaException: Socket server failed to bind ..."
_EXCEPTION = re.compile(r"^(?:Caused by: )?[\w.$]+(?:Exception|Error): .*")
# KRaft controllers get ids far from the brokers' (Kafka requires distinct node ids).
CONTROLLER_ID_BASE = 100


class KafkaStartError(RuntimeError):
    """A Kafka, ZooKeeper or controller process did not start; the message names it and the reason."""


@dataclass(frozen=True)
class KafkaClusterSpec:
    """What to start."""

    directory: Path
    version: str = "3.9.1"
    brokers: int = 3
    kraft: bool | None = None  # None: KRaft from 4.0, ZooKeeper mode below
    control_plane: bool = True  # ZooKeeper mode: control.plane.listener.name=CONTROLLER (KIP-291)
    controllers: int = 1  # KRaft quorum size
    extra: Mapping[str, str] = field(default_factory=dict)  # more broker properties (last wins)
    controller_extra: Mapping[str, str] = field(default_factory=dict)  # more KRaft controller properties
    jmx_exporter: bool = True
    exporter: str = DEFAULT_EXPORTER  # whose metric names (exporters.EXPORTERS)
    log4j: str = "planewatch"  # which logger levels (configs.LOG4J_PROFILES)
    # brokers also listen with configs.SECURE_LISTENERS (SASL_SSL with SCRAM, SSL with client certificates), with the
    # key and certificate chain `broker.pem` and the trusted CAs `ca.pem` of this directory; None: PLAINTEXT only
    tls_dir: Path | None = None
    # the brokers' logs leave through rsyslog to a logging cluster (planewatch.kafka.runs.started); None: not shipped
    ship: ShipTo | None = None

    @property
    def is_kraft(self) -> bool:
        major, _ = artifacts.kafka_major_minor(self.version)
        return major >= 4 if self.kraft is None else self.kraft


@dataclass(frozen=True)
class KafkaSetup:
    """How an operator runs Apache Kafka, as a scenario takes it: the version and mode, whose exporter namings
    (``exporters.EXPORTERS``), which log4j levels (``configs.LOG4J_PROFILES``)."""

    version: str
    kraft: bool | None = None  # None: KRaft from 4.0, ZooKeeper mode below
    exporter: str = DEFAULT_EXPORTER
    log4j: str = "planewatch"
    scrape_interval_s: float = SCRAPE_INTERVAL_S  # how often its exporters are scraped: a scenario stays up for it
    roll_check_lake: Path | None = None  # the lake a pipeline writes for this cluster (rolling-restart-gated asks it)
    ship: ShipTo | None = None  # where its brokers' logs are shipped (rsyslog); None: they stay in their files

    def spec(self, directory: Path, **more: Any) -> KafkaClusterSpec:
        """The cluster to start under ``directory`` in this set-up; ``more``: the scenario's own fields."""
        return KafkaClusterSpec(directory, self.version, kraft=self.kraft, exporter=self.exporter, log4j=self.log4j,
                                ship=self.ship, **more)

    @property
    def is_kraft(self) -> bool:
        return self.spec(Path(".")).is_kraft


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    out: IO[bytes]
    logs: Path
    log_offset: int = 0  # server.log's size when this incarnation started: its "started" line comes after
    log_inode: int = 0  # which file server.log was then (log4j rolls it every hour; 0: none yet)


class KafkaCluster:
    """A running (or stopped) Apache Kafka cluster; see the module docstring."""

    def __init__(self, spec: KafkaClusterSpec) -> None:
        if spec.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        major, minor = artifacts.kafka_major_minor(spec.version)
        if major >= 4 and spec.kraft is False:
            raise ValueError(f"Kafka {spec.version} has no ZooKeeper mode (KRaft only from 4.0)")
        if spec.kraft and (major, minor) < (2, 8):
            raise ValueError(f"Kafka {spec.version} has no KRaft mode")
        self.spec = spec
        self.dir = Path(spec.directory).resolve()
        self.classpath = artifacts.kafka_classpath(spec.version)
        self.agent = artifacts.agent_jar() if spec.jmx_exporter else None
        self.cluster_id = _kafka_uuid()
        self.zookeeper: _Proc | None = None
        self.zk_port = 0
        self.controllers: dict[int, _Proc] = {}
        self.brokers: dict[int, _Proc] = {}
        self.ports: dict[int, dict[str, int]] = {}
        self.control_plane = spec.control_plane and not spec.is_kraft
        self.running = True  # False once stop() ran: cluster.json then says so (scrapers stop asking)

    # -------------------------------------------------------------------------------------------------- layout
    def broker_dir(self, broker_id: int) -> Path:
        """``DIR/broker-N``."""
        return self.dir / f"broker-{broker_id}"

    def controller_dir(self, node_id: int) -> Path:
        """``DIR/controller-N`` (KRaft)."""
        return self.dir / f"controller-{node_id}"

    def _node_ports(self, node_id: int, names: Iterable[str]) -> dict[str, int]:
        ports = self.ports.setdefault(node_id, {})
        for name in names:
            if name not in ports:
                ports[name] = self._unused_port()
        return ports

    def _unused_port(self) -> int:
        """A free port no node of this cluster holds (the kernel may hand the same free port out twice)."""
        taken = {p for ports in self.ports.values() for p in ports.values()} | {self.zk_port}
        while (port := free_port()) in taken:
            pass
        return port

    def _quorum_voters(self) -> str:
        return ",".join(f"{nid}@127.0.0.1:{self.ports[nid]['CONTROLLER']}" for nid in self._controller_ids())

    def _controller_ids(self) -> list[int]:
        return [CONTROLLER_ID_BASE + i for i in range(self.spec.controllers)] if self.spec.is_kraft else []

    def _secure_properties(self, node: configs.KafkaNode) -> dict[str, str]:
        """A broker's TLS and SASL properties when the cluster is secured (spec.tls_dir), else none."""
        if self.spec.tls_dir is None or node.roles != "broker":
            return {}
        return configs.secure_properties(str(self.spec.tls_dir / "broker.pem"), str(self.spec.tls_dir / "ca.pem"))

    def _write_node(self, node_dir: Path, node: configs.KafkaNode) -> Path:
        node_dir.mkdir(parents=True, exist_ok=True)
        (node_dir / "logs").mkdir(exist_ok=True)
        props = configs.server_properties(
            node, brokers=self.spec.brokers,
            zookeeper=None if self.spec.is_kraft else f"127.0.0.1:{self.zk_port}/kafka",
            quorum_voters=self._quorum_voters() if self.spec.is_kraft else None,
            control_plane=self.control_plane,
            extra={**self._secure_properties(node), **(self.spec.extra if node.roles == "broker"
                                                        else self.spec.controller_extra)})
        path = node_dir / "server.properties"
        path.write_text(configs.properties_text(props, f"Apache Kafka {self.spec.version}, written by planewatch"))
        version = artifacts.kafka_major_minor(self.spec.version)
        chosen = configs.loggers(self.spec.log4j, version)
        if version[0] >= 4:
            (node_dir / "log4j2.properties").write_text(configs.log4j2_properties(chosen))
        else:
            (node_dir / "log4j.properties").write_text(configs.log4j_properties(chosen))
        return path

    def _jvm_args(self, node_dir: Path, heap: str, prometheus_port: int | None) -> list[str]:
        major, _ = artifacts.kafka_major_minor(self.spec.version)
        logging = (f"-Dlog4j2.configurationFile={node_dir / 'log4j2.properties'}" if major >= 4
                   else f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}")
        args = ["java", *heap.split(), *JVM_FLAGS, f"-Dkafka.logs.dir={node_dir / 'logs'}", logging]
        if self.agent is not None and prometheus_port:
            args.append(f"-javaagent:{self.agent}=127.0.0.1:{prometheus_port}:{self.dir / 'jmx-exporter.yaml'}")
        return [*args, "-cp", self.classpath]

    # -------------------------------------------------------------------------------------------------- processes
    def _spawn(self, name: str, cmd: list[str], node_dir: Path, console: str = "kafkaServer.out") -> _Proc:
        out = open(node_dir / console, "ab")  # noqa: SIM115 - closed in _reap()
        server_log = node_dir / "logs" / "server.log"
        st = server_log.stat() if server_log.exists() else None
        popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent)
        return _Proc(name, popen, out, node_dir / "logs", st.st_size if st else 0, st.st_ino if st else 0)

    def _format_storage(self, node_dir: Path, props: Path) -> None:
        """KRaft: ``kafka-storage format`` of one node's log dir with the cluster id."""
        cmd = ["java", "-Xmx256m", *JVM_FLAGS, f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
               f"-Dlog4j2.configurationFile={node_dir / 'log4j2.properties'}", f"-Dkafka.logs.dir={node_dir / 'logs'}",
               "-cp", self.classpath, "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(props),
               "--ignore-formatted"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise KafkaStartError(f"{node_dir.name}: kafka-storage format failed: "
                                  f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")

    def _start_zookeeper(self) -> None:
        zdir = self.dir / "zookeeper"
        zdir.mkdir(parents=True, exist_ok=True)
        self.zk_port = self.zk_port or self._unused_port()
        props = zdir / "zookeeper.properties"
        props.write_text(configs.properties_text(configs.zookeeper_properties(str(zdir / "data"), self.zk_port)))
        cmd = ["java", *ZOOKEEPER_HEAP.split(), *JVM_FLAGS, "-Dzookeeper.jmx.log4j.disable=true",
               f"-Dlog4j.configuration=file:{zdir / 'log4j.properties'}", "-cp", self.classpath,
               "org.apache.zookeeper.server.ZooKeeperServerMain", str(props)]
        (zdir / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, f\nlog4j.appender.f=org.apache.log4j.FileAppender\n"
            f"log4j.appender.f.File={zdir / 'zookeeper.log'}\nlog4j.appender.f.layout=org.apache.log4j.PatternLayout\n"
            f"log4j.appender.f.layout.ConversionPattern={configs.LOG_PATTERN}\n")
        self.zookeeper = self._spawn("zookeeper", cmd, zdir, "zookeeper.out")
        self._await(self.zookeeper, lambda: _zk_ok(self.zk_port), f"ZooKeeper on 127.0.0.1:{self.zk_port}")

    def start_controller(self, node_id: int) -> None:
        """(Re)start one KRaft controller (formats its storage on first start)."""
        cdir = self.controller_dir(node_id)
        ports = self._node_ports(node_id, ("CONTROLLER", "prometheus"))
        props = self._write_node(cdir, configs.KafkaNode(node_id, "controller", str(cdir / "data"),
                                                         (("CONTROLLER", ports["CONTROLLER"]),)))
        self._format_storage(cdir, props)
        cmd = [*self._jvm_args(cdir, CONTROLLER_HEAP, ports["prometheus"]), "kafka.Kafka", str(props)]
        self.controllers[node_id] = self._spawn(f"controller {node_id}", cmd, cdir)

    def start_broker(self, broker_id: int, wait: bool = True) -> None:
        """(Re)start one broker; with ``wait``, until it logs that it started and cluster.json is rewritten."""
        bdir = self.broker_dir(broker_id)
        secure = list(configs.SECURE_LISTENERS) if self.spec.tls_dir is not None else []
        names = ["PLAINTEXT", *(["CONTROLLER"] if self.control_plane else []), *secure, "prometheus"]
        ports = self._node_ports(broker_id, names)
        listeners = tuple((n, ports[n]) for n in names if n != "prometheus")
        props = self._write_node(bdir, configs.KafkaNode(broker_id, "broker", str(bdir / "data"), listeners))
        if self.spec.is_kraft:
            self._format_storage(bdir, props)
        cmd = [*self._jvm_args(bdir, BROKER_HEAP, ports["prometheus"]), "kafka.Kafka", str(props)]
        proc = self._spawn(f"broker {broker_id}", cmd, bdir)
        self.brokers[broker_id] = proc
        if wait:
            self._await_started(proc)
            self.write_json()

    def _await(self, proc: _Proc, ready: Any, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if proc.popen.poll() is not None:
                raise KafkaStartError(f"{proc.name} exited with code {proc.popen.returncode} before {what} was "
                                      f"ready: {_reason(proc)}")
            if time.monotonic() > deadline:
                raise KafkaStartError(f"{proc.name}: {what} not ready within {START_TIMEOUT_S:.0f} s: {_reason(proc)}")
            time.sleep(0.2)

    def broker_started(self, broker_id: int) -> bool:
        """Whether the broker's current incarnation has logged that it started (a restart appends to server.log)."""
        return _started(self.brokers[broker_id])

    def _await_started(self, proc: _Proc) -> None:
        self._await(proc, lambda: _started(proc), "the server")

    def start(self) -> None:
        """ZooKeeper or the KRaft quorum, then every broker; write the agent's rules and cluster.json."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "jmx-exporter.yaml").write_text(
            exporter_yaml(EXPORTERS[self.spec.exporter]))
        try:
            if self.spec.is_kraft:
                for nid in self._controller_ids():
                    self._node_ports(nid, ("CONTROLLER", "prometheus"))
                for nid in self._controller_ids():
                    self.start_controller(nid)
            else:
                self._start_zookeeper()
            for bid in range(1, self.spec.brokers + 1):
                self.start_broker(bid, wait=False)
            for bid in range(1, self.spec.brokers + 1):
                self._await_started(self.brokers[bid])
            self._await_registered()
            self.write_json()
        except BaseException:
            self.stop()
            raise

    def _await_registered(self) -> None:
        """Until the cluster's metadata lists every broker (each has registered and the controller knows it)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers()})
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if len(admin.list_topics(timeout=5).brokers) >= len(self.brokers):
                    return
            except Exception:
                pass
            dead = [p for p in self.brokers.values() if p.popen.poll() is not None]
            if dead:
                raise KafkaStartError(f"{dead[0].name} exited: {_reason(dead[0])}")
            if time.monotonic() > deadline:
                raise KafkaStartError(f"the brokers did not all register within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.3)

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a broker (default kill -9) and reap it."""
        _reap(self.brokers[broker_id], sig)

    def kill_controller(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a KRaft controller and reap it."""
        _reap(self.controllers[node_id], sig)

    def stop(self) -> None:
        """SIGTERM the brokers (all at once), then the controllers and ZooKeeper; SIGKILL what outlives the grace."""
        for proc in self.brokers.values():
            if proc.popen.poll() is None:
                proc.popen.terminate()
        for proc in self.brokers.values():
            _reap(proc, signal.SIGTERM)
        for proc in self.controllers.values():
            _reap(proc, signal.SIGTERM)
        if self.zookeeper is not None:
            _reap(self.zookeeper, signal.SIGTERM)
        self.running = False
        if (self.dir / "cluster.json").exists():
            self.write_json()

    # -------------------------------------------------------------------------------------------------- description
    def bootstrap_servers(self, listener: str = "PLAINTEXT") -> str:
        """``127.0.0.1:p1,...`` over the listeners named `listener` (PLAINTEXT, or a SECURE_LISTENERS name)."""
        return ",".join(f"127.0.0.1:{self.ports[b][listener]}" for b in sorted(self.brokers))

    def describe(self) -> dict[str, Any]:
        """The content of cluster.json."""
        brokers = []
        for bid in sorted(self.brokers):
            d = self.broker_dir(bid)
            ports = self.ports[bid]
            listeners = {n: f"127.0.0.1:{p}" for n, p in ports.items() if n != "prometheus"}
            brokers.append({"id": bid, "pid": self.brokers[bid].popen.pid, "listeners": listeners,
                            "host": "127.0.0.1", "port": ports["PLAINTEXT"],
                            "control_listener": "CONTROLLER" if self.control_plane else None,
                            "log_dir": str(d / "data"), "logs_dir": str(d / "logs"), "metrics_dir": None,
                            "prometheus": f"http://127.0.0.1:{ports['prometheus']}/metrics" if self.agent else None,
                            "properties": str(d / "server.properties")})
        controllers = [{"id": nid, "pid": p.popen.pid, "logs_dir": str(self.controller_dir(nid) / "logs"),
                        "quorum": f"127.0.0.1:{self.ports[nid]['CONTROLLER']}",
                        "prometheus": f"http://127.0.0.1:{self.ports[nid]['prometheus']}/metrics"
                        if self.agent else None} for nid, p in sorted(self.controllers.items())]
        return {"bootstrap.servers": self.bootstrap_servers(), "brokers": brokers, "engine": "apache-kafka",
                "kafka_version": self.spec.version, "mode": "kraft" if self.spec.is_kraft else "zookeeper",
                "cluster_id": self.cluster_id, "control_plane": self.control_plane, "running": self.running,
                "zookeeper": {"connect": f"127.0.0.1:{self.zk_port}/kafka", "pid": self.zookeeper.popen.pid,
                              "logs_dir": str(self.dir / "zookeeper")} if self.zookeeper else None,
                "controller": None, "controllers": controllers}

    def write_json(self) -> None:
        """Write ``DIR/cluster.json`` atomically."""
        tmp = self.dir / "cluster.json.tmp"
        tmp.write_text(json.dumps(self.describe(), indent=2) + "\n")
        os.replace(tmp, self.dir / "cluster.json")


def _kafka_uuid() -> str:
    """A cluster id as Kafka makes one (``Uuid.randomUuid``): URL-safe base64 of 16 random bytes, never starting
    with ``-`` (the storage tool would read it as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _reap(proc: _Proc, sig: int) -> None:
    if proc.popen.poll() is None:
        proc.popen.send_signal(sig)
        try:
            proc.popen.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(STOP_GRACE_S)
    proc.out.close()


def _started(proc: _Proc) -> bool:
    """Whether ``proc``'s incarnation has logged that Kafka started."""
    return _logged_started(proc.logs / "server.log", proc.log_offset, proc.log_inode)


def _logged_started(server_log: Path, offset: int, inode: int = 0) -> bool:
    """Whether server.log says, past ``offset`` (a restarted broker appends to its old log), that Kafka started.

    log4j rolls server.log every hour: when server.log is no longer the file ``inode`` names (0: none existed), this
    incarnation's lines are the new server.log's and those past ``offset`` in the rolled file that still has
    ``inode``."""
    parts = [(server_log, offset)]
    try:
        if inode and server_log.stat().st_ino != inode:
            rolled = [r for r in server_log.parent.glob(server_log.name + ".*") if r.stat().st_ino == inode]
            parts = [(server_log, 0), *[(r, offset) for r in rolled]]
    except OSError:
        return False
    for path, start in parts:
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                if any(_STARTED.search(line.decode("utf-8", "replace")) for line in fh):
                    return True
        except OSError:  # rolled away between the listing and the read
            continue
    return False


def _reason(proc: _Proc) -> str:
    """Why a process ended: the last exception message it logged (``...Exception: text``: Kafka's ConfigException,
    a bind failure) in server.log, its console file or zookeeper.log, else the last ERROR/FATAL line, else the
    console's tail."""
    errors: list[str] = []
    tail: list[str] = []
    for path in (proc.logs / "server.log", proc.logs.parent / "kafkaServer.out", proc.logs.parent / "zookeeper.out",
                 proc.logs.parent / "zookeeper.log"):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        causes = [m.group(0) for line in lines if (m := _EXCEPTION.match(line))]
        if causes:
            return causes[-1][:500]
        errors += [m.group(0) for line in lines if (m := _FATAL.search(line))]
        if path.suffix == ".out":
            tail = lines[-3:]
    if errors:
        return errors[-1][:500]
    return " | ".join(tail)[:500] or "no log output"


def _zk_ok(port: int) -> bool:
    """ZooKeeper answers its ``ruok`` four-letter command with ``imok``."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False
