"""KIP-402 part 2: max.connections (broker-wide, per listener, dynamic), per-IP limits, inter-broker protection."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from broker.config import ConfigException
from broker.metrics.registry import Meter
from broker.network.quotas import ConnectionQuotas, QuotaWaitInterrupted, TooManyConnections
from tests.broker.network_helpers import API_VERSIONS, Client, ScriptedApis, meter, running_server
from tests.polling import wait_until

BLOCKED = "kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=PLAINTEXT"


# -- ConnectionQuotas on its own ----------------------------------------------------------------------------------
def test_quotas_per_ip_and_overrides() -> None:
    q = ConnectionQuotas(100, 2, {"10.0.0.9": 3}, None)
    q.add_listener("PLAINTEXT", 100)
    for _ in range(2):
        q.inc("PLAINTEXT", "10.0.0.1", None)
    with pytest.raises(TooManyConnections) as info:
        q.inc("PLAINTEXT", "10.0.0.1", None)
    assert (info.value.address, info.value.limit) == ("10.0.0.1", 2)
    assert q.get("10.0.0.1") == 2  # the rejected one is not counted
    for _ in range(3):
        q.inc("PLAINTEXT", "10.0.0.9", None)
    with pytest.raises(TooManyConnections):
        q.inc("PLAINTEXT", "10.0.0.9", None)
    q.dec("PLAINTEXT", "10.0.0.1")
    q.inc("PLAINTEXT", "10.0.0.1", None)
    with pytest.raises(ValueError, match="no connections"):
        q.dec("PLAINTEXT", "10.9.9.9")


def test_quotas_wait_for_a_slot_and_mark_blocked_time() -> None:
    q = ConnectionQuotas(1, 100, {}, None)
    q.add_listener("PLAINTEXT", 1)
    q.inc("PLAINTEXT", "a", None)
    m = Meter(rate_unit_ns=1.0)
    done = threading.Event()

    def second() -> None:
        q.inc("PLAINTEXT", "b", m)
        done.set()

    t = threading.Thread(target=second)
    t.start()
    assert not done.wait(0.3)  # blocked: the listener is full
    assert m.count >= 0.1e9  # marked while still blocked, not only once the wait is over
    q.dec("PLAINTEXT", "a")
    assert done.wait(5)
    t.join(5)
    assert m.count >= 0.2e9  # at least the ~0.3 s it waited, in nanoseconds
    assert q.total() == 1
    stop = [True]
    timer = threading.Timer(0.2, lambda: stop.__setitem__(0, False))
    timer.start()
    with pytest.raises(QuotaWaitInterrupted):
        q.inc("PLAINTEXT", "c", None, lambda: stop[0])
    timer.join(5)


def test_quotas_inter_broker_listener_is_protected() -> None:
    q = ConnectionQuotas(2, 100, {}, "REPL")
    q.add_listener("PLAINTEXT", 2)
    q.add_listener("REPL", 10)
    q.inc("PLAINTEXT", "a", None)
    q.inc("PLAINTEXT", "a", None)
    q.inc("REPL", "b", None)  # ignores the broker-wide limit
    assert q.total() == 3
    assert q.max_connections_exceeded("PLAINTEXT")
    assert not q.max_connections_exceeded("REPL")


# -- on real sockets ----------------------------------------------------------------------------------------------
def test_max_connections_never_exceeded_and_recovers_after_close(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), {"max.connections": 5, "num.network.threads": 2}) as server:
        assert server.socket_server is not None
        ss = server.socket_server
        port = server.bound_port("PLAINTEXT")
        clients = [Client(port) for _ in range(8)]  # TCP accepts all 8 (kernel backlog); the broker only 5
        wait_until(lambda: ss.connection_count() == 5, what="5 served connections")
        served = clients[:5]
        for c in served:
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        assert ss.quotas.total() == 5
        assert ss.quotas.peak_total == 5
        for c in served[:3]:
            c.close()
        for c in clients[5:]:  # the waiting ones are accepted as slots free up
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        assert ss.quotas.peak_total == 5
        assert meter(server, BLOCKED).count > 0  # the acceptor waited for a slot
        for c in clients:
            c.close()
        wait_until(lambda: ss.quotas.total() == 0, what="all connections closed")


def test_per_listener_limit(tmp_path: Path) -> None:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "listener.name.external.max.connections": 2,
    }
    with running_server(tmp_path, ScriptedApis(), props) as server:
        assert server.socket_server is not None
        quotas = server.socket_server.quotas
        ext = [Client(server.bound_port("EXTERNAL")) for _ in range(3)]
        plain = [Client(server.bound_port("PLAINTEXT")) for _ in range(4)]
        for c in plain:
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        wait_until(lambda: quotas.listener_count("EXTERNAL") == 2, what="2 EXTERNAL connections")
        assert quotas.listener_count("PLAINTEXT") == 4
        ext[0].close()
        assert ext[2].call(API_VERSIONS, 0)["error_code"] == 0
        assert quotas.listener_count("EXTERNAL") == 2
        for c in ext + plain:
            c.close()


def test_per_ip_limit_and_override_with_two_loopback_addresses(tmp_path: Path) -> None:
    props = {"max.connections.per.ip": 2, "max.connections.per.ip.overrides": "127.0.0.2:3"}
    with running_server(tmp_path, ScriptedApis(), props) as server:
        port = server.bound_port("PLAINTEXT")
        ones = [Client(port, source="127.0.0.1") for _ in range(2)]
        twos = [Client(port, source="127.0.0.2") for _ in range(3)]
        for c in ones + twos:
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        extra_one = Client(port, source="127.0.0.1")
        extra_two = Client(port, source="127.0.0.2")
        assert extra_one.closed_by_peer()
        assert extra_two.closed_by_peer()
        ones[0].close()
        assert server.socket_server is not None
        wait_until(lambda: server.socket_server is not None and server.socket_server.quotas.get("127.0.0.1") == 1)
        again = Client(port, source="127.0.0.1")
        assert again.call(API_VERSIONS, 0)["error_code"] == 0
        for c in [*ones, *twos, extra_one, extra_two, again]:
            c.close()
    # server.log and what it rolled over (hourly: a test across the hour finds its first lines in server.log.<hour>)
    log = "".join(f.read_text() for f in sorted((tmp_path / "logs").glob("server.log*")))
    assert ("INFO Rejected connection from /127.0.0.1, address already has the configured maximum of 2 connections. "
            "(kafka.network.Acceptor)") in log
    assert "Rejected connection from /127.0.0.2, address already has the configured maximum of 3 connections." in log


def test_inter_broker_listener_protection_closes_lru_elsewhere(tmp_path: Path) -> None:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "max.connections": 3,
        "num.network.threads": 1,
    }
    with running_server(tmp_path, ScriptedApis(), props) as server:
        assert server.socket_server is not None
        quotas = server.socket_server.quotas
        ext = []
        for _ in range(3):
            c = Client(server.bound_port("EXTERNAL"))
            assert c.call(API_VERSIONS, 0)["error_code"] == 0  # in order: ext[0] is the least recently used
            ext.append(c)
        ext[2].call(API_VERSIONS, 0)
        ext[1].call(API_VERSIONS, 0)
        replica = Client(server.bound_port("PLAINTEXT"))  # protected: accepted although the broker is full
        assert replica.call(API_VERSIONS, 0)["error_code"] == 0
        assert ext[0].closed_by_peer()  # the LRU connection on the other listener made room
        assert ext[1].call(API_VERSIONS, 0)["error_code"] == 0
        assert ext[2].call(API_VERSIONS, 0)["error_code"] == 0
        wait_until(lambda: quotas.total() == 3)
        for c in [*ext, replica]:
            c.close()


def test_dynamic_reconfiguration_of_limits(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), {"num.network.threads": 1}) as server:
        assert server.socket_server is not None
        ss = server.socket_server
        port = server.bound_port("PLAINTEXT")
        first = [Client(port) for _ in range(2)]
        for c in first:
            c.call(API_VERSIONS, 0)
        ss.reconfigure({"max.connections": "2"})
        waiting = Client(port)
        waiting.send(API_VERSIONS, 0)
        assert waiting.closed_by_peer(timeout=0.5) is False  # neither answered nor closed: not accepted yet
        assert ss.quotas.total() == 2
        ss.reconfigure({"max.connections": "3", "listener.name.plaintext.max.connections": "10"})
        waiting.sock.settimeout(10)
        waiting.recv_frame()  # served once the limit is raised
        ss.reconfigure({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:3"})
        assert ss.quotas.max_for_ip("127.0.0.1") == 3
        with pytest.raises(ConfigException, match="Cannot update these configs dynamically"):
            ss.reconfigure({"num.io.threads": "2"})
        with pytest.raises(ConfigException, match=r"Invalid value -5 for configuration max\.connections"):
            ss.reconfigure({"max.connections": "-5"})
        with pytest.raises(ConfigException, match="listener NOPE is not configured"):
            ss.reconfigure({"listener.name.nope.max.connections": "1"})
        for c in [*first, waiting]:
            c.close()


def test_lowering_max_connections_closes_the_least_recently_used(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), {"num.network.threads": 1}) as server:
        assert server.socket_server is not None
        ss = server.socket_server
        port = server.bound_port("PLAINTEXT")
        clients = [Client(port) for _ in range(4)]
        for c in clients:  # activity order: clients[0] is the least recently used
            c.call(API_VERSIONS, 0)
        ss.reconfigure({"max.connections": "2"})
        assert clients[0].closed_by_peer()
        assert clients[1].closed_by_peer()
        wait_until(lambda: ss.quotas.total() == 2, what="2 connections left")
        for c in clients[2:]:
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        for c in clients:
            c.close()
