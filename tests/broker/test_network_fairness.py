"""KIP-402 fairness (bounded per-processor connection queues, blocking only when all are full) and KIP-291 isolation."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

from broker.log4j import Log4j
from broker.metrics.registry import Meter, MetricsRegistry
from broker.network.acceptor import assign_new_connection
from broker.network.processor import CONNECTION_QUEUE_SIZE
from broker.network.socket_server import SocketServer
from tests.broker.network_helpers import (
    API_VERSIONS,
    CONTROL_PLANE_PROPS,
    LAIR_BODY,
    LEADER_AND_ISR,
    METADATA,
    Client,
    ScriptedApis,
    gauge,
    make_config,
    raise_fd_limit,
    running_server,
)
from tests.polling import wait_until

STORM_CONNECTIONS = 1500  # enough to overflow 3 x 20 queued slots many times; bounded for a 2-core CI box
STORM_DEADLINE_S = 60.0
# How long the LeaderAndIsr may take while the data plane is held: generous for a loaded CI box; without a control
# plane it cannot be answered at all until the gate opens, so this only bounds the test's duration.
ANSWER_WINDOW_S = 5.0
CHURN_ROUNDS, CHURN_SIZE = 3, 500  # then 3 x 500 closes and re-opens, so the storm lasts more than an instant


class FakeProcessor:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.queued: list[str] = []
        self.blocking_puts = 0

    def accept(self, sock: Any, address: str, may_block: bool, blocked_meter: Meter | None) -> bool:
        if len(self.queued) < self.capacity:
            self.queued.append(address)
            return True
        if may_block:  # a real processor would block here until its queue has room
            self.blocking_puts += 1
            self.queued.append(address)
            return True
        return False


def test_round_robin_skips_full_queues_and_blocks_only_when_all_are_full() -> None:
    procs = [FakeProcessor(2) for _ in range(3)]
    index = 0
    for i in range(6):
        index, ok = assign_new_connection(procs, index, None, f"c{i}", None)  # type: ignore[arg-type]
        assert ok
    assert [p.queued for p in procs] == [["c0", "c3"], ["c1", "c4"], ["c2", "c5"]]
    assert sum(p.blocking_puts for p in procs) == 0
    index, ok = assign_new_connection(procs, index, None, "c6", None)  # type: ignore[arg-type]
    assert ok
    assert [p.blocking_puts for p in procs] == [0, 0, 1]  # every queue full: block on the last one tried


def test_a_full_processor_is_skipped_without_blocking() -> None:
    procs = [FakeProcessor(5), FakeProcessor(0), FakeProcessor(5)]
    index = 1  # the next in line is the full one
    seen = []
    for i in range(4):
        index, _ = assign_new_connection(procs, index, None, f"c{i}", None)  # type: ignore[arg-type]
        seen.append([len(p.queued) for p in procs])
    assert procs[1].blocking_puts == 0
    assert seen[-1] == [2, 0, 2]


def test_acceptor_blocks_only_when_every_processor_queue_is_full(tmp_path: Path) -> None:
    raise_fd_limit(4096)
    config = make_config(tmp_path, num__network__threads=3)
    registry = MetricsRegistry()
    server = SocketServer(config, registry, Log4j())
    acceptor = server.acceptors["PLAINTEXT"]
    procs = server.processors["PLAINTEXT"]
    blocked = server.acceptor_blocked_meter("PLAINTEXT")
    port = acceptor.bound_port
    acceptor.start()  # processors NOT started: their new-connection queues only fill
    clients: list[socket.socket] = []
    try:
        for _ in range(3 * CONNECTION_QUEUE_SIZE):
            clients.append(socket.create_connection(("127.0.0.1", port)))
        wait_until(lambda: all(p.new_connections.qsize() == CONNECTION_QUEUE_SIZE for p in procs),
                   what="every queue full")
        assert blocked.count == 0  # 60 connections, 3 x 20 slots: never blocked
        clients.append(socket.create_connection(("127.0.0.1", port)))  # the 61st: the acceptor must block
        wait_until(lambda: server.quotas.total() == 3 * CONNECTION_QUEUE_SIZE + 1, what="61st counted")
        time.sleep(0.3)
        assert blocked.count == 0  # still blocked (marked when the put completes)
        for p in procs:
            p.start()
        wait_until(lambda: server.connection_count() == 3 * CONNECTION_QUEUE_SIZE + 1, what="all registered")
        assert blocked.count >= 0.2e9  # it was blocked for at least ~0.3 s
    finally:
        for c in clients:
            c.close()
        server.shutdown()
    assert not acceptor.is_alive()
    assert not any(p.is_alive() for p in procs)


def test_connection_storm_never_starves_existing_connections(tmp_path: Path) -> None:
    raise_fd_limit(STORM_CONNECTIONS + 1024)
    props = {"num.network.threads": 3, "num.io.threads": 2}
    with running_server(tmp_path, ScriptedApis(), props) as server:
        port = server.bound_port("PLAINTEXT")
        existing = [Client(port) for _ in range(10)]
        storming = threading.Event()
        stop = threading.Event()
        during_storm = [0] * len(existing)
        errors: list[BaseException] = []

        def keep_sending(i: int) -> None:
            try:
                while not stop.is_set():
                    existing[i].call(API_VERSIONS, 0)
                    if storming.is_set():
                        during_storm[i] += 1
            except BaseException as e:
                errors.append(e)

        workers = [threading.Thread(target=keep_sending, args=(i,)) for i in range(len(existing))]
        for w in workers:
            w.start()
        storm: list[socket.socket] = []
        deadline = time.monotonic() + STORM_DEADLINE_S
        try:
            storming.set()
            while len(storm) < STORM_CONNECTIONS and time.monotonic() < deadline:
                storm.append(socket.create_connection(("127.0.0.1", port)))
            for _ in range(CHURN_ROUNDS):  # keep the acceptor and processors busy: close and reopen a slice
                for s in storm[:CHURN_SIZE]:
                    s.close()
                storm[:CHURN_SIZE] = [socket.create_connection(("127.0.0.1", port)) for _ in range(CHURN_SIZE)]
            wait_until(lambda: server.socket_server is not None
                       and server.socket_server.connection_count() >= STORM_CONNECTIONS, timeout=STORM_DEADLINE_S,
                       what="storm registered")
            storming.clear()
        finally:
            stop.set()
            for w in workers:
                w.join(30)
            for s in storm:
                s.close()
        assert not errors
        assert len(storm) == STORM_CONNECTIONS
        assert min(during_storm) > 0, during_storm  # every existing connection was served during the storm
        for c in existing:
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
            c.close()


def _saturate_and_send_lair(tmp_path: Path, control_plane: bool) -> tuple[ScriptedApis, bool]:
    """One io thread held at a gate by Metadata requests (a saturated data plane), then a LeaderAndIsr.

    Returns the handler (its handling order) and whether the LeaderAndIsr was answered while the gate was closed.
    """
    apis = ScriptedApis()
    apis.gate.clear()
    props: dict[str, Any] = {"num.io.threads": 1, "num.network.threads": 2}
    if control_plane:
        props.update(CONTROL_PLANE_PROPS)
    with running_server(tmp_path, apis, props) as server:
        data_port = server.bound_port("PLAINTEXT")
        data = [Client(data_port) for _ in range(12)]
        for c in data:
            c.send(METADATA, 1, {"topics": None})
        wait_until(lambda: gauge(server, "kafka.network:type=RequestChannel,name=RequestQueueSize") == 11,
                   what="data-plane backlog")
        controller = Client(server.bound_port("CONTROLLER" if control_plane else "PLAINTEXT"))
        controller.send(LEADER_AND_ISR, 2, LAIR_BODY)
        controller.sock.settimeout(ANSWER_WINDOW_S)
        try:
            controller.recv_frame()
            answered_while_saturated = True
        except TimeoutError:
            answered_while_saturated = False
        apis.gate.set()
        controller.sock.settimeout(10.0)
        if not answered_while_saturated:
            controller.recv_frame()
        for c in data:
            c.recv_frame()
            c.close()
        controller.close()
    return apis, answered_while_saturated


def test_kip291_control_plane_answers_leader_and_isr_before_the_data_backlog(tmp_path: Path) -> None:
    apis, answered = _saturate_and_send_lair(tmp_path / "on", control_plane=True)
    assert answered
    assert apis.position("LeaderAndIsr") == 0  # handled before any of the 12 queued Metadata requests
    assert [h[2] for h in apis.handled if h[0] == "LeaderAndIsr"] == ["CONTROLLER"]


def test_without_control_plane_leader_and_isr_waits_behind_the_data_backlog(tmp_path: Path) -> None:
    apis, answered = _saturate_and_send_lair(tmp_path / "off", control_plane=False)
    assert not answered
    assert apis.position("LeaderAndIsr") == 12  # after every Metadata request queued before it
