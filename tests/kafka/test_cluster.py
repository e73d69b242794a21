"""Apache Kafka itself from the fetched jars: a failed start names the node and Kafka's reason and leaves nothing
running; ``planewatch cluster --kafka`` refuses what cannot run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec, KafkaStartError
from tests.polling import wait_until

# The console script of the environment running the tests (.venv, or .venv-newest under `make test-newest`).
PLANEWATCH = Path(sys.executable).with_name("planewatch")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _all_pids(cluster: KafkaCluster) -> list[int]:
    procs = [*cluster.brokers.values(), *cluster.controllers.values(), cluster.zookeeper]
    return [p.popen.pid for p in procs if p is not None]


def test_a_broker_whose_port_is_taken_fails_with_kafkas_reason_and_nothing_stays(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster = KafkaCluster(KafkaClusterSpec(tmp_path / "c", "3.9.1", brokers=2, control_plane=False,
                                                extra={"listeners": f"PLAINTEXT://127.0.0.1:{port}"}))
        with pytest.raises(KafkaStartError, match=r"broker \d .*(Address already in use|BindException)") as err:
            cluster.start()
    assert "broker" in str(err.value)
    assert cluster.zookeeper is not None  # ZooKeeper had started: the failure came from the broker
    assert not [pid for pid in _all_pids(cluster) if _alive(pid)]


def test_a_bad_config_value_fails_with_kafkas_config_exception(tmp_path: Path) -> None:
    cluster = KafkaCluster(KafkaClusterSpec(tmp_path / "c", "3.9.1", brokers=1, extra={"num.io.threads": "zero"}))
    with pytest.raises(KafkaStartError, match=r"broker 1 .*num\.io\.threads"):
        cluster.start()
    assert not [pid for pid in _all_pids(cluster) if _alive(pid)]


def test_cli_refuses_a_version_that_was_never_fetched_and_zookeeper_mode_on_4x(tmp_path: Path) -> None:
    pw = PLANEWATCH
    env = {**os.environ, "PLANEWATCH_JVM_DIR": str(tmp_path / "empty")}
    done = subprocess.run([str(pw), "cluster", "--kafka", "3.9.1", "--dir", str(tmp_path / "c")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "org.apache.kafka:kafka_2.13:3.9.1 is not fetched" in done.stderr
    done = subprocess.run([str(pw), "scenario", "broker-bounce", "--kafka", "4.4.0", "--dir", str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "does not have this mechanism" in done.stderr


def test_kraft_cluster_starts_writes_the_contract_and_stops_clean(tmp_path: Path) -> None:
    cluster = KafkaCluster(KafkaClusterSpec(tmp_path / "c", "4.4.0", brokers=1))
    try:
        cluster.start()
        info = json.loads((tmp_path / "c" / "cluster.json").read_text())
        assert (info["engine"], info["mode"], info["kafka_version"]) == ("apache-kafka", "kraft", "4.4.0")
        assert info["bootstrap.servers"] == f"127.0.0.1:{cluster.ports[1]['PLAINTEXT']}"
        (broker,) = info["brokers"]
        assert broker["control_listener"] is None  # KRaft has no control-plane listener
        assert info["controllers"][0]["id"] == 100
        logs = Path(broker["logs_dir"])
        assert (logs / "server.log").read_text().count("(kafka.") > 0  # Kafka's layout [%d] %p %m (%c)
    finally:
        cluster.stop()
    assert not [pid for pid in _all_pids(cluster) if _alive(pid)]


def test_kill_9_of_the_launcher_leaves_no_kafka_or_zookeeper_behind(tmp_path: Path) -> None:
    import signal

    pw = PLANEWATCH
    d = tmp_path / "c"
    proc = subprocess.Popen([str(pw), "cluster", "--kafka", "3.9.1", "--brokers", "1", "--dir", str(d)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    pids: list[int] = []
    try:
        def started() -> bool:
            assert proc.poll() is None, "the launcher exited before the cluster started"
            return (d / "cluster.json").exists()

        wait_until(started, 120, "cluster.json", interval=0.2)
        info = json.loads((d / "cluster.json").read_text())
        pids = [b["pid"] for b in info["brokers"]] + [info["zookeeper"]["pid"]]
        assert all(_alive(p) for p in pids)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        wait_until(lambda: not any(map(_alive, pids)), 30, "the Kafka and ZooKeeper JVMs to stop with their launcher",
                   interval=0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in pids:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
