"""The controller in-process behind its HTTP registration channel: epochs, bounces, fencing, bad input."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cluster.controller import Controller
from broker.cluster.http import ControllerClient
from tests.broker.cluster_helpers import running_controller
from tests.broker.data_plane_helpers import free_port

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[tuple[Controller, ControllerClient]]:
    before = set(threading.enumerate())
    with running_controller(tmp_path) as running:
        yield running
    assert not [t.name for t in set(threading.enumerate()) - before if t.is_alive() and not t.daemon]


def _listeners() -> dict[str, tuple[str, int]]:
    return {"PLAINTEXT": ("127.0.0.1", free_port())}  # nobody listens: control requests just retry


def test_epochs_are_monotonic_and_a_reregistration_is_a_bounce(tmp_path: Path,
                                                               controller: tuple[Controller, ControllerClient]) -> None:
    c, client = controller
    e1 = client.register(1, _listeners(), {"PLAINTEXT": "PLAINTEXT"}, None)
    e2 = client.register(2, _listeners(), {}, None)
    e1b = client.register(1, _listeners(), {}, None)
    assert e1 < e2 < e1b
    assert client.heartbeat(1, e1) == 77  # the old incarnation is fenced
    assert client.heartbeat(1, e1b) == 0
    st = client.status()
    assert st["brokers"]["1"]["epoch"] == e1b
    assert st["controller_id"] == 1
    c.log4j.flush()
    text = (tmp_path / "logs" / "controller.log").read_text()
    assert "bounced brokers: 1, all live brokers: 1,2" in text
    persisted = json.loads((tmp_path / "state" / "controller-state.json").read_text())
    assert persisted["next_broker_epoch"] == e1b + 1  # a restarted controller never reuses an epoch


def test_topic_creation_and_errors(controller: tuple[Controller, ControllerClient]) -> None:
    _, client = controller
    client.register(1, _listeners(), {}, None)
    client.register(2, _listeners(), {}, None)
    [ok] = client.create_topics([{"name": "t", "num_partitions": 3, "replication_factor": 2}])
    assert ok["error_code"] == 0
    [dup, too_many] = client.create_topics([{"name": "t", "num_partitions": 1, "replication_factor": 1},
                                           {"name": "u", "num_partitions": 1, "replication_factor": 3}])
    assert (dup["error_code"], too_many["error_code"]) == (36, 38)
    parts = [p for p in client.status()["partitions"] if p["topic"] == "t"]
    assert sorted(p["leader"] for p in parts) in ([1, 1, 2], [1, 2, 2])
    assert all(len(set(p["replicas"])) == 2 and p["isr"] == p["replicas"] for p in parts)


def test_bad_input_answers_400(controller: tuple[Controller, ControllerClient]) -> None:
    _, client = controller
    for path, data in (("/register", b"{not json"), ("/register", b"[1]"), ("/heartbeat", b'{"id": 1}'),
                       ("/nope", b"{}")):
        req = urllib.request.Request(client.url + path, data=data, method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 400
    assert client.status()["brokers"] == {}  # nothing half-registered


def test_a_failover_tells_every_broker_the_live_brokers_before_whom_to_follow(tmp_path: Path) -> None:
    """onControllerFailover's order: UpdateMetadata to every live broker before any LeaderAndIsr. A broker told to
    follow a leader missing from its metadata cache starts no fetcher for it (and stays out of the ISR until the
    next leader change): broker 3 registering before broker 1 after a full restart hit that."""
    with running_controller(tmp_path) as (_, client):
        client.register(1, _listeners(), {}, None)
        client.register(3, _listeners(), {}, None)
        [ok] = client.create_topics([{"name": "t", "num_partitions": 2, "replication_factor": 2}])
        assert ok["error_code"] == 0
    with running_controller(tmp_path) as (c, client):  # restarted: waits for brokers 1 and 3, here 3 first
        client.register(3, _listeners(), {}, None)
        client.register(1, _listeners(), {}, None)
        assert client.status()["controller_id"] == 1
        c.log4j.flush()
        text = (tmp_path / "logs" / "state-change.log").read_text()
    sends = [line for line in text.splitlines() if "[Controller id=1 epoch=2] Sending" in line
             and ("UpdateMetadata" in line or "LeaderAndIsr request to broker 3" in line)]
    assert sends, text[-2000:]
    assert "Sending UpdateMetadata request to brokers HashSet(1, 3)" in sends[0], sends
