"""Starting the multi-process reference cluster on a busy machine: a controller that answers late, a port taken.

Each test starts real controller and broker processes (``broker.cluster.launcher``) and always stops them.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from broker.cluster.launcher import Cluster, ClusterSpec, free_port
from tests.broker.cluster_helpers import CLUSTER_POLL, CLUSTER_S, status
from tests.polling import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.integration]


def test_a_broker_started_while_the_controller_is_down_registers_once_it_is_back(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSpec(tmp_path / "c", brokers=1))
    try:
        cluster.start_controller()
        cluster.kill_controller()
        cluster.start_broker(1, wait=False)
        server_log = cluster.broker_dir(1) / "logs" / "server.log"
        wait_until(lambda: server_log.exists() and "Could not register with the controller" in server_log.read_text(),
                   timeout=CLUSTER_S, what="the broker trying to register")
        assert cluster.brokers[1].popen.poll() is None
        cluster.start_controller()  # same URL
        wait_until(lambda: "1" in status(cluster)["brokers"], timeout=CLUSTER_S, what="broker 1 registered",
                   **CLUSTER_POLL)
    finally:
        cluster.stop()


def test_a_first_start_whose_port_is_taken_picks_new_ones(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        cluster = Cluster(ClusterSpec(tmp_path / "c", brokers=1))
        cluster.ports[1] = {"PLAINTEXT": port, "CONTROLLER": free_port(), "prometheus": free_port()}
        try:
            cluster.start()
            assert cluster.ports[1]["PLAINTEXT"] != port
            assert "1" in status(cluster)["brokers"]
            assert "Address already in use" in (cluster.broker_dir(1) / "stdout.log").read_text()
        finally:
            cluster.stop()
