"""The reference broker held against Apache Kafka: the same requests and the same workload on both, compared.

Run: ``.venv/bin/python -m benchmarks.fidelity [--kafka 3.9.1] [--baseline 2.8.2|none] [--brokers N]
[--dir var/fidelity] [--json FILE]``

One cluster at a time (2 cores): the reference cluster (``broker/cluster/launcher.py``: a controller process and N
``broker.cluster.node`` processes), then Apache Kafka ``--kafka`` in ZooKeeper mode with the control-plane listener
(``planewatch/kafka/cluster.py``), then the baseline Kafka (2.8, the version the reference imitates; its answers,
templates and metric names tell a version difference from a bug). On each, in order:

1. the workload: create a topic (2 partitions, replication ``min(2, N)``), produce :data:`MESSAGES` acks=all
   messages, read them back, kill -9 the highest broker id and restart it (leadership moves; on one broker the
   controller fails over), produce :data:`MESSAGES_AFTER_MOVE` more;
2. the wire probes (:func:`all_probes`), from the independent client :mod:`benchmarks.fidelity_wire` (Kafka's own
   message schemas): ApiVersions, Metadata v0-v12 for the topic and a missing one, bad requests (unknown topic
   produce/fetch, invalid acks, unsupported versions, unknown API key, garbled and oversized frames), and, on broker
   1's control-plane listener as a controller would send them, LeaderAndIsr / UpdateMetadata / StopReplica for a
   probe topic (answers, stale controller epoch, stale broker epoch, stale leader epoch); topic configs and admin
   APIs (:mod:`benchmarks.fidelity_probes`); the group coordinator's protocol and metadata details
   (:mod:`benchmarks.fidelity_group_probes`);
3. the metric names of every Prometheus endpoint (Kafka: the JMX exporter agent, then once more with every MBean
   exported, to tell a name Kafka lacks from one the agent's include list leaves out; the reference controller's
   JSON-lines metrics mapped through the same rules);
4. the templates of every state-change.log, controller.log and kafka-request.log line written so far (read
   before the cluster stops: a shutdown is not the scenario), then the stop (always, also on a failure).

:mod:`benchmarks.fidelity_compare` compares and classifies (pure); the report is printed as text and, with
``--json``, written as JSON. Exit 0 when every difference is on purpose, 1 when something is classified ``fix``,
2 when a cluster could not run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks import fidelity_compare as fc
from benchmarks.fidelity_group_probes import group_probes
from benchmarks.fidelity_probes import (
    MISSING_TOPIC,
    PROBE_TOPIC,
    TOPIC,
    Probe,
    ProbeContext,
    probes,
    run_probe,
)
from benchmarks.fidelity_wire import KafkaSchemas

REPO = Path(__file__).resolve().parent.parent
#: Messages produced before and after the leadership move: a few thousand, a second of work per cluster.
MESSAGES = 3000
MESSAGES_AFTER_MOVE = 500
MESSAGE_BYTES = 100
#: Topic names the templates replace with ``<topic>``.
TOPICS = (TOPIC, MISSING_TOPIC, PROBE_TOPIC, "__consumer_offsets")
LOG_KINDS = ("state-change.log", "controller.log", "kafka-request.log")
#: The file that marks a directory as this command's (only such a directory, or an empty one, is wiped).
RUN_MARKER = ".fidelity-run"
#: How long a cluster may take to reach a state the workload waits for (elections, a restarted broker's
#: registration after ZooKeeper's 6 s session timeout, a JVM start on a loaded 2-core machine).
WAIT_S = 90.0
POLL_S = 0.25
#: The reference controller writes its metrics every 5 s (controller_main.METRICS_INTERVAL_MS) plus a margin.
CONTROLLER_REPORT_WAIT_S = 15.0
_CONTROLLER_PREFIX = re.compile(r"\[Controller id=(\d+) epoch=(\d+)\]")


class FidelityError(RuntimeError):
    """A cluster did not reach the state the workload needs."""


# ------------------------------------------------------------------------------------------------------ clusters
class Target(Protocol):
    """One cluster under comparison."""

    label: str
    directory: Path

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def bootstrap(self) -> str: ...
    def port(self, broker_id: int, listener: str) -> int: ...
    def kill_broker(self, broker_id: int) -> None: ...
    def restart_broker(self, broker_id: int) -> None: ...
    def log_files(self, kind: str) -> list[Path]: ...
    def metric_names(self) -> dict[str, frozenset[str]]: ...
    def all_metric_names(self) -> dict[str, frozenset[str]] | None: ...


class _ClusterTarget:
    """What both targets do the same way through their cluster launcher (``self.cluster``)."""

    cluster: Any

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def bootstrap(self) -> str:
        return str(self.cluster.bootstrap_servers())

    def port(self, broker_id: int, listener: str) -> int:
        return int(self.cluster.ports[broker_id][listener])

    def kill_broker(self, broker_id: int) -> None:
        self.cluster.kill_broker(broker_id)


@dataclass
class ReferenceTarget(_ClusterTarget):
    """The reference cluster: a controller process and N brokers."""

    directory: Path
    brokers: int
    label: str = "reference"
    cluster: Any = None

    def start(self) -> None:
        from broker.cluster.launcher import Cluster, ClusterSpec

        self.cluster = Cluster(ClusterSpec(self.directory, brokers=self.brokers,
                                           extra={"kafka.request.logger.level": "DEBUG",
                                                  "state.change.logger.level": "TRACE"}))
        self.cluster.start()

    def restart_broker(self, broker_id: int) -> None:
        self.cluster.start_broker(broker_id)

    def log_files(self, kind: str) -> list[Path]:
        return sorted(self.directory.glob(f"*/logs/{kind}*"))

    def metric_names(self) -> dict[str, frozenset[str]]:
        names: dict[str, frozenset[str]] = {}
        for bid in range(1, self.brokers + 1):
            _merge(names, fc.metric_names(_scrape(self.port(bid, "prometheus"))))
        # the controller reports every 5 s: wait for a report taken after the workload (its channel's metrics)
        since_ms = int(time.time() * 1000)
        metrics_dir = self.directory / "controller" / "metrics"
        _poll("a controller metrics report after the workload", lambda: _jsonl_newest_ms(metrics_dir) >= since_ms,
              timeout_s=CONTROLLER_REPORT_WAIT_S)
        _merge(names, _jsonl_metric_names(metrics_dir))
        return names

    def all_metric_names(self) -> dict[str, frozenset[str]] | None:
        return None


@dataclass
class KafkaTarget(_ClusterTarget):
    """Apache Kafka in ZooKeeper mode with the control-plane listener and the JMX exporter agent."""

    directory: Path
    brokers: int
    version: str
    label: str = ""
    cluster: Any = None

    def __post_init__(self) -> None:
        self.label = self.label or f"kafka-{self.version}"

    def start(self) -> None:
        from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec

        self.cluster = KafkaCluster(KafkaClusterSpec(self.directory, self.version, brokers=self.brokers,
                                                     control_plane=True))
        self.cluster.start()

    def restart_broker(self, broker_id: int) -> None:
        """Start the broker again until it stays up: a broker killed with -9 leaves ``/brokers/ids/N`` to its
        ZooKeeper session until the session times out, and a broker that finds the node taken exits (NodeExists)."""
        def up() -> bool:
            if self.cluster.broker_started(broker_id):
                return True
            if self.cluster.brokers[broker_id].popen.poll() is not None:
                self.cluster.kill_broker(broker_id)  # reaps the exited JVM, closes its output
                self.cluster.start_broker(broker_id, wait=False)
            return False

        self.cluster.start_broker(broker_id, wait=False)
        _poll(f"broker {broker_id} to start again", up)

    def log_files(self, kind: str) -> list[Path]:
        return sorted(self.directory.glob(f"broker-*/logs/{kind}*"))

    def metric_names(self) -> dict[str, frozenset[str]]:
        names: dict[str, frozenset[str]] = {}
        for bid in range(1, self.brokers + 1):
            _merge(names, fc.metric_names(_scrape(self.port(bid, "prometheus")), exporter_counter_suffix=True))
        return names

    def all_metric_names(self) -> dict[str, frozenset[str]] | None:
        """Every MBean through the same rules: the agent reloads its rules file when it changes."""
        import yaml

        path = self.directory / "jmx-exporter.yaml"
        doc = yaml.safe_load(path.read_text())
        doc.pop("includeObjectNames", None)
        before = {bid: _reloads(_scrape(self.port(bid, "prometheus"))) for bid in range(1, self.brokers + 1)}
        path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
        names: dict[str, frozenset[str]] = {}
        for bid in range(1, self.brokers + 1):
            port = self.port(bid, "prometheus")
            text = _poll("the JMX exporter reloading its rules", lambda p=port, b=bid: (  # type: ignore[misc]
                t if _reloads(t := _scrape(p)) > before[b] else None))
            _merge(names, fc.metric_names(text, exporter_counter_suffix=True))
        return names


def _merge(into: dict[str, frozenset[str]], names: dict[str, frozenset[str]]) -> None:
    for k, v in names.items():
        into[k] = into.get(k, frozenset()) | v


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        return str(resp.read().decode("utf-8"))


def _reloads(text: str) -> float:
    m = re.search(r"^jmx_config_reload_success_total (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


def _jsonl_newest_ms(directory: Path) -> int:
    """The ``ts`` of the last complete line of the newest JSON-lines metrics file (0 when none)."""
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        return 0
    lines = files[-1].read_text().splitlines()
    for line in reversed(lines):
        try:
            return int(json.loads(line)["ts"])
        except (ValueError, KeyError):
            continue
    return 0


def _jsonl_metric_names(directory: Path) -> dict[str, frozenset[str]]:
    """The names the reference controller's JSON-lines metrics get from the jmx_exporter rules (it serves no
    Prometheus endpoint of its own)."""
    from broker.metrics.prometheus import prometheus_name
    from broker.metrics.registry import MetricName

    out: dict[str, set[str]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                sample = json.loads(line)
            except ValueError:
                continue
            domain, _, props = sample["mbean"].partition(":")
            kv = [p.split("=", 1) for p in props.split(",")]
            d = dict(kv)
            tags = tuple((k, v) for k, v in kv if k not in ("type", "name"))
            mapped = prometheus_name(MetricName(domain, d.get("type", ""), d.get("name", ""), tags),
                                     sample["attribute"])
            if mapped is not None:
                out.setdefault(mapped[0], set()).update(mapped[2])
    return {k: frozenset(v) for k, v in out.items()}


def _poll(what: str, fn: Callable[[], Any], timeout_s: float = WAIT_S) -> Any:
    """Call ``fn`` until it returns something truthy; FidelityError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while True:
        try:
            value = fn()
            if value:
                return value
        except Exception as exc:  # a broker that is still starting: try again until the deadline
            last = exc
        if time.monotonic() > deadline:
            raise FidelityError(f"timed out after {timeout_s:.0f} s waiting for {what}"
                                + (f" (last error: {last})" if last else ""))
        time.sleep(POLL_S)


# ------------------------------------------------------------------------------------------------------ workload
#: librdkafka's log level: critical only (a broker killed on purpose would fill stderr with connection refusals).
CLIENT_LOG_LEVEL = 2


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000, "log_level": CLIENT_LOG_LEVEL})


def _topic_ready(admin: Any, brokers: int) -> bool:
    md = admin.list_topics(topic=TOPIC, timeout=5)
    topic = md.topics.get(TOPIC)
    return (len(md.brokers) >= brokers and topic is not None and topic.error is None and len(topic.partitions) == 2
            and all(p.leader >= 0 for p in topic.partitions.values()))


def _produce(bootstrap: str, count: int, start: int) -> int:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": CLIENT_LOG_LEVEL,
                         "message.timeout.ms": int(WAIT_S * 1000)})
    delivered: list[int] = []
    errors: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        (errors.append(str(err)) if err is not None else delivered.append(1))

    for i in range(start, start + count):
        payload = f"{i:08d}".encode().ljust(MESSAGE_BYTES, b".")
        while True:
            try:
                producer.produce(TOPIC, payload, key=str(i % 17).encode(), on_delivery=report)
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(WAIT_S) != 0 or errors:
        raise FidelityError(f"produce failed: {len(errors)} errors, first {errors[:1]}")
    return len(delivered)


def _consume(bootstrap: str, expected: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fidelity", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "log_level": CLIENT_LOG_LEVEL})
    try:
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in (0, 1)])
        seen = 0
        deadline = time.monotonic() + WAIT_S
        while seen < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        return seen
    finally:
        consumer.close()


def workload(target: Target, brokers: int) -> dict[str, Any]:
    """Create, produce, read back, move leadership (kill -9 + restart), produce again; what happened, timed."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    t0 = time.monotonic()
    bootstrap = target.bootstrap()
    admin = _admin(bootstrap)  # held: a collected AdminClient fails its pending futures
    futures = admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=min(2, brokers))])
    futures[TOPIC].result(WAIT_S)
    _poll(f"{TOPIC} to have leaders", lambda: _topic_ready(admin, brokers))
    produced = _produce(bootstrap, MESSAGES, 0)
    consumed = _consume(bootstrap, produced)
    victim = brokers
    target.kill_broker(victim)
    if brokers > 1:
        _poll(f"leadership to move off broker {victim}", lambda: _leaders_avoid(admin, victim))
    target.restart_broker(victim)
    _poll(f"broker {victim} back and {TOPIC} led", lambda: _topic_ready(admin, brokers))
    produced += _produce(target.bootstrap(), MESSAGES_AFTER_MOVE, MESSAGES)
    return {"produced": produced, "consumed_before_move": consumed, "restarted_broker": victim,
            "seconds": round(time.monotonic() - t0, 1)}


def _leaders_avoid(admin: Any, broker_id: int) -> bool:
    md = admin.list_topics(topic=TOPIC, timeout=5)
    topic = md.topics.get(TOPIC)
    return topic is not None and all(p.leader not in (broker_id, -1) for p in topic.partitions.values())


def _controller(target: Target) -> tuple[int, int]:
    """(controller id, controller epoch) as the state-change logs show them (the newest epoch logged)."""
    best = (-1, -1)
    for path in target.log_files("state-change.log"):
        for m in _CONTROLLER_PREFIX.finditer(path.read_text(errors="replace")):
            cid, epoch = int(m.group(1)), int(m.group(2))
            if epoch >= best[1]:
                best = (cid, epoch)
    if best[1] < 0:
        raise FidelityError(f"{target.label}: no controller line in any state-change.log")
    return best


# ------------------------------------------------------------------------------------------------------ one cluster
@dataclass
class Observed:
    """Everything seen on one cluster."""

    label: str
    api_versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    cases: dict[str, fc.Outcome] = field(default_factory=dict)
    templates: dict[str, set[str]] = field(default_factory=dict)
    metrics: dict[str, frozenset[str]] = field(default_factory=dict)
    all_metrics: dict[str, frozenset[str]] | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def all_probes() -> list[Probe]:
    """The wire probes, then the group and metadata probes."""
    return probes() + group_probes()


def observe(target: Target, schemas: KafkaSchemas, brokers: int, progress: Callable[[str], None]) -> Observed:
    """Start the cluster, run the workload and the probes, scrape, read the logs, stop (always)."""
    seen = Observed(target.label)
    t0 = time.monotonic()
    progress(f"{target.label}: starting {brokers} broker(s) in {target.directory}")
    try:
        target.start()
        progress(f"{target.label}: workload")
        seen.workload = workload(target, brokers)
        cid, epoch = _poll("the controller's epoch in the logs", lambda: _controller(target))
        ctx = ProbeContext(schemas, target, brokers, cid, epoch)
        progress(f"{target.label}: {len(all_probes())} probes (controller {cid}, epoch {epoch})")
        for probe in all_probes():
            result, body = run_probe(ctx, probe)
            seen.cases[probe.name] = result
            if probe.name == "ApiVersions v3 answer" and body is not None:
                seen.api_versions = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in body["ApiKeys"]}
        progress(f"{target.label}: metrics")
        seen.metrics = target.metric_names()
        seen.all_metrics = target.all_metric_names()
        # read before the stop: a shutdown (Kafka's controlled shutdown, a controller moving) is not the scenario
        for kind in LOG_KINDS:
            lines: list[str] = []
            for path in target.log_files(kind):
                lines += path.read_text(errors="replace").splitlines()
            seen.templates[kind] = fc.templates_of(lines, TOPICS)
    finally:
        target.stop()
    seen.seconds = round(time.monotonic() - t0, 1)
    progress(f"{target.label}: done in {seen.seconds} s")
    return seen


def build_report(ref: Observed, kafka: Observed, baseline: Observed | None, schemas: KafkaSchemas,
                 kafka_version: str, brokers: int) -> dict[str, Any]:
    """The comparison of what the clusters showed (pure given the observations)."""
    names = {m.api_key: m.name.removesuffix("Request") for m in schemas.messages.values()
             if m.api_key is not None and m.name.endswith("Request")}
    base_cases = baseline.cases if baseline else None
    base_apis = baseline.api_versions if baseline else None
    report: dict[str, Any] = {
        "kafka_version": kafka_version,
        "baseline_version": baseline.label.removeprefix("kafka-") if baseline else None,
        "brokers": brokers,
        "apis": fc.compare_apis(kafka.api_versions, ref.api_versions, names, baseline=base_apis),
        "cases": fc.compare_cases(kafka.cases, ref.cases, baseline=base_cases),
        "templates": [row for kind in LOG_KINDS for row in fc.compare_templates(
            kind, ref.templates[kind], kafka.templates[kind], baseline.templates[kind] if baseline else None)],
        "metrics": fc.compare_metrics(ref.metrics, kafka.metrics, kafka.all_metrics,
                                      baseline=baseline.metrics if baseline else None),
        "intended": [{"kind": e.kind, "pattern": e.pattern, "reason": e.reason, "category": e.category}
                     for e in fc.DIFFERS_ON_PURPOSE],
        "workload": {o.label: o.workload for o in (ref, kafka, baseline) if o},
        "seconds": {o.label: o.seconds for o in (ref, kafka, baseline) if o},
    }
    report["summary"] = fc.summary(report)
    return report


def run(directory: Path, kafka_version: str = "3.9.1", baseline_version: str | None = "2.8.2", brokers: int = 1,
        progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Observe the reference cluster, Kafka and the baseline Kafka one after the other; the report."""
    from planewatch.kafka import artifacts

    directory = directory.resolve()
    if directory.exists() and any(directory.iterdir()) and not (directory / RUN_MARKER).exists():
        raise FidelityError(f"{directory} is not empty and holds no earlier fidelity run: not wiping it")
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / RUN_MARKER).write_text("the working directory of python -m benchmarks.fidelity (wiped per run)\n")
    jar = artifacts.ensure(f"kafka-{kafka_version}") / f"kafka-clients-{kafka_version}.jar"
    schemas = KafkaSchemas.from_jar(jar)
    ref = observe(ReferenceTarget(directory / "reference", brokers), schemas, brokers, progress)
    kafka = observe(KafkaTarget(directory / f"kafka-{kafka_version}", brokers, kafka_version), schemas, brokers,
                    progress)
    baseline = None
    if baseline_version:
        baseline = observe(KafkaTarget(directory / f"kafka-{baseline_version}", brokers, baseline_version), schemas,
                           brokers, progress)
    return build_report(ref, kafka, baseline, schemas, kafka_version, brokers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity", description=__doc__.split("\n")[0])
    parser.add_argument("--kafka", default="3.9.1", help="the Apache Kafka version to hold the reference against")
    parser.add_argument("--baseline", default="2.8.2",
                        help="the Kafka version the reference imitates (tells version differences); 'none' skips it")
    parser.add_argument("--brokers", type=int, default=1, help="brokers per cluster (default 1)")
    parser.add_argument("--dir", type=Path, default=REPO / "var" / "fidelity", help="working directory (wiped)")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    from confluent_kafka import KafkaException

    t0 = time.monotonic()
    try:
        report = run(args.dir, args.kafka, None if args.baseline == "none" else args.baseline, args.brokers,
                     progress=lambda m: print(f"  .. {m}", file=sys.stderr, flush=True))
    except (FidelityError, RuntimeError, OSError, KafkaException) as exc:
        print(f"fidelity: {exc}", file=sys.stderr)
        return 2
    report["seconds"]["total"] = round(time.monotonic() - t0, 1)
    print(fc.render_text(report))
    print(f"run time {report['seconds']['total']} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    s = report["summary"]
    fixes = (s["apis"]["differing_fix"] + s["cases"]["different_fix"] + s["metrics"]["fix"]
             + sum(t["fix"] for t in s["templates"].values()))
    return 1 if fixes else 0


if __name__ == "__main__":
    sys.exit(main())
