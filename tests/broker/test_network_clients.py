"""Real Kafka clients (kafka-python, kcat/librdkafka) through the socket server and the real KafkaApis."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.config import KafkaConfig
from broker.server import KafkaServer

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaServer]:
    config = KafkaConfig({
        "broker.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "control.plane.listener.name": "CONTROLLER",
        "log.dirs": str(tmp_path / "data"),
        "cluster.id": "pw-test",
    })
    server = KafkaServer(config)  # the default apis factory: broker.apis KafkaApis
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


def test_kafka_python_bootstraps_through_the_data_listener(broker: KafkaServer) -> None:
    from kafka import KafkaConsumer

    port = broker.bound_port("PLAINTEXT")
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=10000,
                             client_id="pw-kafka-python")
    try:
        assert consumer.topics() == set()  # Metadata answered; no topics yet
        brokers = consumer._client.cluster.brokers()
        assert {(b.node_id, b.host, b.port) for b in brokers} == {(1, "127.0.0.1", port)}
    finally:
        consumer.close()
    assert broker.socket_server is not None
    total = broker.registry.get("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Metadata")
    assert total is not None
    assert total.attributes()["Count"] >= 1


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_lists_metadata(broker: KafkaServer) -> None:
    port = broker.bound_port("PLAINTEXT")
    out = subprocess.run(["kcat", "-L", "-b", f"127.0.0.1:{port}", "-m", "10"], capture_output=True, text=True,
                         timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    assert f"broker 1 at 127.0.0.1:{port}" in out.stdout
