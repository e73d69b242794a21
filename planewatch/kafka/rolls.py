"""Rolling restarts of Apache Kafka under a produce load: one on a fixed timer, as careless automation does, and one
that waits for `planewatch roll-check` before each restart; what the clients saw in each.

The first two restart every broker once, in id order: SIGTERM (a controlled shutdown), wait for the process to
exit, start it again, and

* ``rolling-restart-timer``: start it without waiting and stop the next broker ROLL_INTERVAL_S after the previous
  stop began (a Type=simple `systemctl restart` and a fixed pause); then wait until the cluster recovered;
* ``rolling-restart-gated``: wait until it logs that it started; before each stop (and at the end) run
  `planewatch roll-check --cluster NAME --lake LAKE --since RESTARTED` every ROLL_CHECK_POLL_S until it exits 0 (at
  most ROLL_CHECK_TIMEOUT_S), recording each verdict and its reasons in the timeline. `--since` is the time the
  last restart returned: data scraped before it says nothing of the cluster after it;
* ``rolling-restart-isr-gated``: as Strimzi's roller waits, before each restart every partition's ISR full again
  (the Admin API's metadata), then SIGTERM, start, wait until started; no planewatch in the loop;
* ``rolling-restart-driven``: `planewatch roll --bootstrap-server ...` chooses the order (brokers, then on KRaft a
  quorum of DRIVEN_CONTROLLERS controllers, the leader last) and gates each restart on the Admin API (with
  --roll-check-lake, on the lake's signals too, its steps recorded in the lake's roll_steps); its
  restart command asks this process to restart the node (SIGTERM, start, wait until started).

Meanwhile a producer (acks=all, a topic of min.insync.replicas=2) records each message's delivery time and errors,
and a metadata watcher polls the topic's leaders and ISRs: the time each partition had no leader, the time it had
fewer in-sync replicas than min.insync.replicas, the most partitions offline at once. ``roll-finished`` reports them.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from broker.scenarios.base import Timeline, consume_keys, produce, wait_until
from planewatch.kafka.cluster import KafkaCluster, KafkaSetup
from planewatch.kafka.runs import create_topic, started

__all__ = ["ROLLS", "rolling_restart", "throttle_replication"]

ROLL_TOPIC = "roll"
ROLL_PARTITIONS = 6
ROLL_MIN_ISR = 2
# careless automation: the next broker is stopped this long after the previous one was (`systemctl restart` of a
# Type=simple unit returns once the process is spawned, then a fixed pause): on 2 cores a Kafka broker takes 5-10 s
# to start and more to catch up
ROLL_INTERVAL_S = 8.0
# the timer roll is over once every broker started and every replica is back in its ISR (at most this long)
RECOVERY_TIMEOUT_S = 180.0
# the gated roll: how often it asks, and how long it waits for `safe` before it restarts anyway (and says so)
ROLL_CHECK_POLL_S = 3.0
ROLL_CHECK_TIMEOUT_S = 300.0
# a single roll-check may take this long (a Python start and one lake read on a loaded machine)
ROLL_CHECK_CALL_TIMEOUT_S = 60.0
# the load: acks=all at this rate of ROLL_VALUE_BYTES records, bounded in records and time
ROLL_RATE = 500
ROLL_VALUE_BYTES = 1000
# A restarted broker must fetch what was written while it was down before it rejoins the ISR. Kafka throttles only
# replicas outside the ISR (KIP-73): at this rate per broker (leader and follower side) against the load's
# 500 KB/s, a broker down for 10 s needs 15-20 s to catch up, as a broker with real data takes minutes
REPLICATION_THROTTLE_BYTES = 800_000
ROLL_MAX_RECORDS = 1_000_000
ROLL_MAX_SECONDS = 900.0
# what a producer's user would call a stall: no message acknowledged for this long
STALL_S = 1.0
# the metadata watcher's poll interval
WATCH_INTERVAL_S = 0.5
# Kafka moves leadership back to the preferred replicas every leader.imbalance.check.interval.seconds (300 s by
# default); a roll that waits for it (the verdict's PREFERRED_LEADERS) would take 5 minutes a broker, so both rolls
# run with 15 s (a KRaft controller's setting; in ZooKeeper mode the controller broker's)
ROLL_BROKER_CONFIG = {"leader.imbalance.check.interval.seconds": "15"}
# `planewatch roll` on KRaft restarts the controllers too: a quorum of three, so that one may go at a time
DRIVEN_CONTROLLERS = 3
# how often `planewatch roll`'s gate asks the Admin API
DRIVEN_POLL_S = 2.0
# before the roll: leaders settled and the scrapers' first samples taken (the gate needs fresh data)
SETTLE_S = 20.0


class _Producer:
    """acks=all load that records each message's delivery latency and every final error, by error name."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sent: dict[int, float] = {}
        self.latencies_ms: list[float] = []
        self.acked: list[int] = []
        self.ack_times: list[float] = []
        self.errors: Counter[str] = Counter()
        self._from = float("inf")  # messages sent from then on are measured (a fresh JVM's first seconds are not)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="roll-producer", daemon=True)

    def measure_from(self, t: float) -> None:
        """Measure the messages sent from monotonic time `t` on."""
        self._from = t

    def start(self) -> _Producer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(ROLL_MAX_SECONDS + 60)

    def _delivered(self, err: Any, msg: Any) -> None:
        key = int(msg.key())
        now = time.monotonic()
        sent = self.sent.pop(key, now)
        if err is None:
            self.acked.append(key)
        if sent < self._from:
            return
        if err is None:
            self.ack_times.append(now)
            self.latencies_ms.append((now - sent) * 1e3)
        else:
            self.errors[err.name()] += 1

    def _run(self) -> None:
        from confluent_kafka import Producer

        # a Java producer's defaults: 30 s per request, 120 s to deliver a record
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5,
                      "request.timeout.ms": 30_000, "message.timeout.ms": 120_000})
        start = time.monotonic()
        value = b"x" * ROLL_VALUE_BYTES
        for i in range(ROLL_MAX_RECORDS):
            if self._stop.is_set() or time.monotonic() - start > ROLL_MAX_SECONDS:
                break
            if (ahead := start + i / ROLL_RATE - time.monotonic()) > 0:
                p.poll(ahead)
            self.sent[i] = time.monotonic()
            produce(p, ROLL_TOPIC, i, value, i % ROLL_PARTITIONS, self._delivered)
        p.flush(130)

    def report(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        gaps = [b - a for a, b in zip(self.ack_times, self.ack_times[1:], strict=False)]
        return {"acked": len(self.acked), "measured": len(lat), "failed": sum(self.errors.values()),
                "errors": dict(self.errors),
                "latency_p50_ms": round(statistics.median(lat), 1) if lat else None,
                "latency_p99_ms": round(lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))], 1) if lat else None,
                "latency_max_ms": round(lat[-1], 1) if lat else None,
                "stalls": sum(1 for g in gaps if g >= STALL_S),
                "longest_stall_s": round(max(gaps, default=0.0), 2)}


class _MetadataWatch:
    """Polls the topic's leaders and ISRs: per partition, the seconds without a leader and with fewer in-sync
    replicas than min.insync.replicas; the most partitions offline at once."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.leaderless_s: defaultdict[int, float] = defaultdict(float)
        self.under_min_isr_s: defaultdict[int, float] = defaultdict(float)
        self.max_offline = 0
        self.polls = 0
        self.failed_polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="roll-metadata", daemon=True)

    def start(self) -> _MetadataWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        last = time.monotonic()
        while not self._stop.wait(WATCH_INTERVAL_S):
            now = time.monotonic()
            step, last = now - last, now
            try:
                parts = admin.list_topics(ROLL_TOPIC, timeout=5).topics[ROLL_TOPIC].partitions
            except Exception:  # every broker it knows is down: counted, the next poll tries again
                self.failed_polls += 1
                continue
            self.polls += 1
            offline = 0
            for pid, p in parts.items():
                if p.leader < 0:
                    self.leaderless_s[pid] += step
                    offline += 1
                if len(p.isrs) < ROLL_MIN_ISR:
                    self.under_min_isr_s[pid] += step
            self.max_offline = max(self.max_offline, offline)

    def report(self) -> dict[str, Any]:
        return {"leaderless_s_total": round(sum(self.leaderless_s.values()), 1),
                "leaderless_s_max": round(max(self.leaderless_s.values(), default=0.0), 1),
                "under_min_isr_s_total": round(sum(self.under_min_isr_s.values()), 1),
                "max_offline_partitions": self.max_offline, "metadata_polls": self.polls,
                "metadata_polls_failed": self.failed_polls}


def _roll_check(cluster_name: str, lake: Path, since: str | None) -> tuple[int, dict[str, Any]]:
    """`planewatch roll-check --json` as a script runs it: (exit status, the verdict printed)."""
    cmd = [sys.executable, "-m", "planewatch.cli", "roll-check", "--cluster", cluster_name, "--lake", str(lake),
           "--json", *(("--since", since) if since else ())]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=ROLL_CHECK_CALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 2, {"verdict": "unknown", "reasons": [{"status": "unknown", "check": "-",
                                                      "text": "roll-check timed out"}]}
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        return done.returncode, {"verdict": "error", "reasons": [{"status": "error", "check": "-",
                                                                   "text": (done.stderr or "")[-300:]}]}


def _gate(tl: Timeline, cluster_name: str, lake: Path, before: int, since: str | None) -> float:
    """Poll roll-check (with `--since` the last restart) until it says safe (or the timeout); each change of
    verdict goes to the timeline. The seconds it waited."""
    began = time.monotonic()
    end = began + ROLL_CHECK_TIMEOUT_S
    said = None
    checks = 0
    while True:
        rc, v = _roll_check(cluster_name, lake, since)
        checks += 1
        reasons = [f"{r['status']} {r['check']}: {r['text']}" for r in v.get("reasons", [])
                   if r.get("status") not in ("ok", "skipped")]
        if (v.get("verdict"), reasons) != said:
            tl.emit("roll-check", before_broker=before, verdict=v.get("verdict"), exit_status=rc, reasons=reasons)
            said = (v.get("verdict"), reasons)
        waited = round(time.monotonic() - began, 1)
        if rc == 0:
            tl.emit("roll-gate-passed", before_broker=before, checks=checks, waited_s=waited)
            return waited
        if time.monotonic() > end:
            tl.emit("roll-gate-timed-out", before_broker=before, checks=checks, verdict=v.get("verdict"),
                    waited_s=waited)
            return waited
        time.sleep(ROLL_CHECK_POLL_S)


def rolling_restart(d: Path, tl: Timeline, setup: KafkaSetup, mode: str) -> None:
    """Restart every node once under load, on a timer, gated by roll-check, or by `planewatch roll` (module
    docstring)."""
    gated = mode == GATED
    if gated and setup.roll_check_lake is None:
        raise ValueError("rolling-restart-gated needs the lake the pipeline writes (--roll-check-lake DIR)")
    name = d.name  # the cluster's name in the lake: its directory under the demo's clusters/
    quorum = {"controllers": DRIVEN_CONTROLLERS} if mode == DRIVEN and setup.is_kraft else {}
    with started(setup.spec(d / "cluster", extra=ROLL_BROKER_CONFIG, controller_extra=ROLL_BROKER_CONFIG, **quorum),
                 tl) as cluster:
        create_topic(cluster, ROLL_TOPIC, ROLL_PARTITIONS, 3, {"min.insync.replicas": str(ROLL_MIN_ISR),
                                                               "leader.replication.throttled.replicas": "*",
                                                               "follower.replication.throttled.replicas": "*"})
        throttle_replication(cluster)
        tl.emit("replication-throttled", bytes_per_s=REPLICATION_THROTTLE_BYTES)
        producer = _Producer(cluster.bootstrap_servers()).start()
        watch = _MetadataWatch(cluster.bootstrap_servers()).start()
        tl.emit("load-started", topic=ROLL_TOPIC, rate=ROLL_RATE, min_insync_replicas=ROLL_MIN_ISR)
        time.sleep(max(SETTLE_S, 2 * setup.scrape_interval_s))
        started_at = time.monotonic()
        producer.measure_from(started_at)
        tl.emit("roll-started", gated=gated, mode=mode)
        waited = 0.0
        try:
            waited = (_drive(cluster, tl, d, name, setup.roll_check_lake) if mode == DRIVEN
                      else _isr_gated(cluster, tl) if mode == ISR_GATED
                      else _roll(cluster, tl, setup, gated, name))
        finally:
            producer.stop()
            watch.stop()
        roll_s = time.monotonic() - started_at
        report = {**producer.report(), **watch.report(), "roll_s": round(roll_s, 1), "gated": gated, "mode": mode,
                  "gate_wait_s": waited, "restarts": len(cluster.brokers) + (len(cluster.controllers)
                                                                              if mode == DRIVEN else 0)}
        keys = set(consume_keys(cluster.bootstrap_servers(), ROLL_TOPIC, ROLL_PARTITIONS, len(set(producer.acked))))
        report["lost"] = len(set(producer.acked) - keys)
        tl.emit("roll-finished", **report)


def _roll(cluster: KafkaCluster, tl: Timeline, setup: KafkaSetup, gated: bool, name: str) -> float:
    """Restart every broker; the seconds spent waiting for roll-check (0 on the timer)."""
    brokers = sorted(cluster.brokers)
    waited = 0.0
    restarted: str | None = None  # when the last restart returned: the gate wants data newer than that
    for i, broker in enumerate(brokers):
        began = time.monotonic()
        if gated:
            assert setup.roll_check_lake is not None
            waited += _gate(tl, name, setup.roll_check_lake, broker, restarted)
        _restart(cluster, tl, broker, wait=gated)
        restarted = datetime.now(UTC).isoformat()
        if not gated and i < len(brokers) - 1:
            time.sleep(max(0.0, began + ROLL_INTERVAL_S - time.monotonic()))
    if gated:
        assert setup.roll_check_lake is not None
        return waited + _gate(tl, name, setup.roll_check_lake, -1, restarted)  # over when the cluster is safe again
    wait_until("every broker started", lambda: all(cluster.broker_started(b) for b in brokers),
               timeout_s=RECOVERY_TIMEOUT_S)
    cluster.write_json()
    _await_isr_full(cluster, tl)  # what the careless roll left is reported, and the clients' numbers still are
    return waited


def throttle_replication(cluster: KafkaCluster) -> None:
    """Every broker's replication throttle (dynamic broker configs: a restart keeps them)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    rate = str(REPLICATION_THROTTLE_BYTES)
    for b in sorted(cluster.brokers):  # one broker resource per call (the admin API's rule)
        resource = ConfigResource("BROKER", str(b), incremental_configs=[
            ConfigEntry(name, rate, incremental_operation=AlterConfigOpType.SET)
            for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")])
        for fut in admin.incremental_alter_configs([resource]).values():
            fut.result(60)


def _partition_states(cluster: KafkaCluster) -> list[dict[str, Any]]:
    """Each partition's leader, replicas and ISR ([] while no broker answers)."""
    from confluent_kafka.admin import AdminClient

    try:
        parts = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()}).list_topics(
            ROLL_TOPIC, timeout=5).topics[ROLL_TOPIC].partitions
    except Exception:  # no broker answers
        return []
    return [{"partition": pid, "leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isrs)}
            for pid, p in sorted(parts.items())]


def _isr_full(cluster: KafkaCluster) -> bool:
    states = _partition_states(cluster)
    return bool(states) and all(len(p["isr"]) == len(p["replicas"]) for p in states)


def _await_isr_full(cluster: KafkaCluster, tl: Timeline | None = None) -> float:
    """Poll until every partition's ISR is full (at most RECOVERY_TIMEOUT_S); with `tl`, say whether the roll
    recovered. The seconds it waited."""
    began = time.monotonic()
    while not (full := _isr_full(cluster)) and time.monotonic() - began < RECOVERY_TIMEOUT_S:
        time.sleep(WATCH_INTERVAL_S)
    if tl is not None:
        if full:
            tl.emit("roll-recovered")
        else:
            tl.emit("roll-not-recovered", after_s=RECOVERY_TIMEOUT_S, partitions=_partition_states(cluster))
    return time.monotonic() - began


def _isr_gated(cluster: KafkaCluster, tl: Timeline) -> float:
    """Restart every broker, each once every partition's ISR is full again (the Admin API's metadata, polled every
    WATCH_INTERVAL_S), as Strimzi's roller waits for under-replication; the seconds it waited."""
    waited = 0.0
    for broker in sorted(cluster.brokers):
        took = _await_isr_full(cluster)
        waited += took
        tl.emit("isr-gate-passed", before_broker=broker, waited_s=round(took, 1))
        _restart(cluster, tl, broker)
    return round(waited + _await_isr_full(cluster, tl), 1)


def _drive(cluster: KafkaCluster, tl: Timeline, d: Path, name: str, lake: Path | None) -> float:
    """`planewatch roll` over the cluster (Admin API gate; with `lake`, the lake's signals too and its steps recorded
    in roll_steps), its restart command a request this process
    serves: the command leaves `<node>.req` in a directory and returns once `<node>.done` appears (as `systemctl
    restart` returns once the unit started). Each of its steps goes to the timeline; the seconds it ran."""
    queue = d / "restart-requests"
    queue.mkdir(parents=True, exist_ok=True)
    cmd = (f"touch {queue}/{{node}}.req && while [ ! -e {queue}/{{node}}.done ]; do sleep 0.2; done && "
           f"rm {queue}/{{node}}.done")
    began = time.monotonic()
    driver = subprocess.Popen([sys.executable, "-m", "planewatch.cli", "roll", "--cluster", name, "--bootstrap-server",
                               cluster.bootstrap_servers(), "--restart-cmd", cmd, "--poll-s", str(DRIVEN_POLL_S),
                               "--gate-timeout-s", str(ROLL_CHECK_TIMEOUT_S), "--json",
                               *(("--lake", str(lake)) if lake is not None else ())],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    steps = threading.Thread(target=_steps, args=(driver, tl), name="roll-steps", daemon=True)
    steps.start()
    try:
        while driver.poll() is None and time.monotonic() - began < ROLL_MAX_SECONDS:
            for req in sorted(queue.glob("*.req")):
                node = int(req.stem)
                req.unlink()
                _restart(cluster, tl, node)
                (queue / f"{node}.done").touch()
            time.sleep(WATCH_INTERVAL_S)
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait(30)
        steps.join(30)
    tl.emit("roll-driver-exited", exit_status=driver.returncode)
    cluster.write_json()
    return round(time.monotonic() - began, 1)


def _steps(driver: subprocess.Popen[str], tl: Timeline) -> None:
    """`planewatch roll --json`'s lines into the timeline."""
    assert driver.stdout is not None
    for line in driver.stdout:
        try:
            step = json.loads(line)
        except ValueError:
            tl.emit("roll-output", line=line.rstrip()[-300:])
            continue
        tl.emit(f"roll-{step.pop('step', 'step')}", **{k: v for k, v in step.items() if k != "at"})


def _restart(cluster: KafkaCluster, tl: Timeline, node: int, wait: bool = True) -> None:
    """SIGTERM one node (a controlled shutdown), wait for it to exit, start it again (a broker: with `wait`, until it
    logs that it started)."""
    if node in cluster.controllers:
        cluster.kill_controller(node, signal.SIGTERM)
        tl.emit("controller-stopped", node=node, signal="SIGTERM")
        cluster.start_controller(node)
        tl.emit("controller-restarted", node=node)
        return
    cluster.kill_broker(node, signal.SIGTERM)
    tl.emit("broker-stopped", broker=node, signal="SIGTERM")
    cluster.start_broker(node, wait=wait)
    tl.emit("broker-restarted", broker=node)


TIMER, GATED, DRIVEN, ISR_GATED = "timer", "gated", "driven", "isr-gated"
ROLLS = {"rolling-restart-timer": TIMER, "rolling-restart-gated": GATED, "rolling-restart-driven": DRIVEN,
         "rolling-restart-isr-gated": ISR_GATED}
