"""The socket server on real loopback sockets: serving, muting, bad input, idle expiry, metrics and logs."""

from __future__ import annotations

import json
import math
import socket
import threading
from pathlib import Path

import pytest

from broker.network.processor import Processor
from broker.network.request import Request, Response
from broker.protocol import ErrorCode, decode_response, encode_request
from tests.broker.network_helpers import (
    API_VERSIONS,
    CONTROL_PLANE_PROPS,
    METADATA,
    Client,
    ScriptedApis,
    gauge,
    meter,
    running_server,
)
from tests.polling import wait_until


def test_serves_api_versions_and_metadata_and_reports_listeners(tmp_path: Path) -> None:
    apis = ScriptedApis()
    with running_server(tmp_path, apis, CONTROL_PLANE_PROPS) as server:
        planes = {lst.name: lst.plane for lst in server.listeners()}
        assert planes == {"PLAINTEXT": "data-plane", "CONTROLLER": "control-plane"}
        data = Client(server.bound_port("PLAINTEXT"))
        ctrl = Client(server.bound_port("CONTROLLER"))
        for client in (data, ctrl):
            resp = client.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            assert resp["error_code"] == 0
            assert any(k["api_key"] == METADATA for k in resp["api_keys"])
        assert data.call(METADATA, 1, {"topics": None})["controller_id"] == 1
        data.close()
        ctrl.close()
        assert {h[2] for h in apis.handled} == {"PLAINTEXT", "CONTROLLER"}


def test_one_request_in_flight_per_connection(tmp_path: Path) -> None:
    apis = ScriptedApis(metadata_delay_s=0.02)
    with running_server(tmp_path, apis, {"num.io.threads": 4}) as server:
        c = Client(server.bound_port("PLAINTEXT"))
        wire = b"".join(encode_request(METADATA, 1, corr, "pipelined", {"topics": None}) for corr in range(1, 9))
        c.sock.sendall(wire)  # 8 pipelined requests in one write
        got = [decode_response(METADATA, 1, c.recv_frame())[0] for _ in range(8)]
        c.close()
    assert got == list(range(1, 9))
    assert apis.max_concurrent_per_connection == 1


def test_bad_frames_close_only_their_connection(tmp_path: Path) -> None:
    apis = ScriptedApis()
    props = {"socket.request.max.bytes": 1000}
    with running_server(tmp_path, apis, props) as server:
        port = server.bound_port("PLAINTEXT")
        healthy = Client(port)
        assert healthy.call(API_VERSIONS, 0)["error_code"] == 0
        cases = {
            "oversized": b"\x00\x00\x03\xe9" + b"\x00" * 16,  # 1001 > socket.request.max.bytes
            "negative size": b"\xff\xff\xff\xf0",
            "truncated header": b"\x00\x00\x00\x03\x00\x12\x00",
            "unknown api": b"\x00\x00\x00\x10\x7f\xff\x00\x00\x00\x00\x00\x07" + b"\xde\xad\xbe\xef" * 2,
            "garbled client id": b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x50",
        }
        for name, wire in cases.items():
            bad = Client(port)
            bad.sock.sendall(wire)
            assert bad.closed_by_peer(), name
            bad.close()
            assert healthy.call(API_VERSIONS, 0)["error_code"] == 0, f"healthy connection broken after {name}"
        invalid = sum(gauge(server, f"kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor={i}",
                            "invalid-request-total") for i in range(3))
        assert invalid == len(cases)
        healthy.close()
    server_log = (tmp_path / "logs" / "server.log").read_text()
    assert server_log.count("because of error (kafka.network.Processor)") == len(cases)
    assert "FrameTooLarge: Invalid receive (size = 1001 larger than 1000)" in server_log


def test_unsupported_versions_get_kafkas_error_answer(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis()) as server:
        port = server.bound_port("PLAINTEXT")
        c = Client(port)
        c.sock.sendall(encode_request(API_VERSIONS, 3, 5, "new-client", {"client_software_name": "x",
                                                                         "client_software_version": "1"})
                       .replace(b"\x00\x12\x00\x03", b"\x00\x12\x00\x63", 1))  # ApiVersions v99
        corr, body = decode_response(API_VERSIONS, 0, c.recv_frame())
        assert (corr, body["error_code"]) == (5, ErrorCode.UNSUPPORTED_VERSION)
        assert [k["api_key"] for k in body["api_keys"]] == [API_VERSIONS]
        assert c.call(API_VERSIONS, 0)["error_code"] == 0  # the connection stays open (KIP-511 retry)
        other = Client(port)
        other.sock.sendall(encode_request(METADATA, 1, 9, "x", {"topics": None})
                           .replace(b"\x00\x03\x00\x01", b"\x00\x03\x00\x63", 1))  # Metadata v99
        assert other.closed_by_peer()
        c.close()
        other.close()


def test_handler_exception_closes_that_connection_only(tmp_path: Path) -> None:
    apis = ScriptedApis()
    apis.fail_correlation_ids.add(1)
    with running_server(tmp_path, apis) as server:
        port = server.bound_port("PLAINTEXT")
        doomed, fine = Client(port), Client(port)
        fine.correlation = 10
        doomed.send(API_VERSIONS, 0)
        assert doomed.closed_by_peer()
        assert fine.call(API_VERSIONS, 0)["error_code"] == 0
        doomed.close()
        fine.close()
    assert "Exception when handling request" in (tmp_path / "logs" / "server.log").read_text()


def test_idle_connections_expire_active_ones_stay(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), {"connections.max.idle.ms": 1000}) as server:
        port = server.bound_port("PLAINTEXT")
        idle, active = Client(port), Client(port)
        stop = threading.Event()
        errors: list[BaseException] = []

        def keep_busy() -> None:
            try:
                while not stop.wait(0.05):
                    active.call(API_VERSIONS, 0)
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=keep_busy)
        t.start()
        try:
            assert idle.closed_by_peer(timeout=5)
        finally:
            stop.set()
            t.join(10)
        assert not errors
        assert active.call(API_VERSIONS, 0)["error_code"] == 0
        idle.close()
        active.close()


def test_request_queue_bounded_and_processors_block(tmp_path: Path) -> None:
    apis = ScriptedApis()
    apis.gate.clear()
    props = {"queued.max.requests": 2, "num.io.threads": 1, "num.network.threads": 1}
    with running_server(tmp_path, apis, props) as server:
        port = server.bound_port("PLAINTEXT")
        clients = [Client(port) for _ in range(6)]
        for c in clients:
            c.send(METADATA, 1, {"topics": None})
        qsize = "kafka.network:type=RequestChannel,name=RequestQueueSize"
        wait_until(lambda: gauge(server, qsize) == 2, what="a full request queue")
        # 1 in the handler + 2 queued + 1 held by the blocked processor; the rest wait in the socket.
        assert len(apis.handled) == 0
        assert gauge(server, qsize) == 2
        apis.gate.set()
        for c in clients:
            assert decode_response(METADATA, 1, c.recv_frame())[0] == 1
            c.close()
        assert [h[0] for h in apis.handled] == ["Metadata"] * 6


def test_metrics_and_request_log(tmp_path: Path) -> None:
    props = {**CONTROL_PLANE_PROPS, "metrics.interval.ms": 200}
    with running_server(tmp_path, ScriptedApis(), props) as server:
        c = Client(server.bound_port("PLAINTEXT"))
        c.call(API_VERSIONS, 3, {"client_software_name": "pw-test", "client_software_version": "1.0"})
        for _ in range(2):
            c.call(API_VERSIONS, 2)
        c.close()
        wait_until(lambda: server.socket_server is not None and server.socket_server.connection_count() == 0)
        reg = server.registry
        total = reg.get("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=ApiVersions")
        assert total is not None
        assert total.attributes()["Count"] == 3
        rm = "kafka.network:type=RequestMetrics,name="
        assert meter(server, rm + "RequestsPerSec,request=ApiVersions,version=2").count == 2
        assert meter(server, rm + "RequestsPerSec,request=ApiVersions,version=3").count == 1
        assert meter(server, rm + "ErrorsPerSec,request=ApiVersions,error=NONE").count == 3
        for name in ("RequestQueueSize", "ControlPlaneRequestQueueSize", "ResponseQueueSize",
                     "ControlPlaneResponseQueueSize"):
            assert gauge(server, f"kafka.network:type=RequestChannel,name={name}") == 0
        assert gauge(server, "kafka.network:type=RequestChannel,name=ResponseQueueSize,processor=0") == 0
        assert gauge(server, "kafka.network:type=RequestChannel,name=ControlPlaneResponseQueueSize,processor=3") == 0
        assert 0.0 <= gauge(server, "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent") <= 1.0
        assert 0.0 <= gauge(server, "kafka.network:type=Processor,name=IdlePercent,networkProcessor=0") <= 1.0
        idle = meter(server, "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent")
        wait_until(lambda: idle.count > 0, what="handler idle time marked")  # after a 300 ms poll
        assert 0.0 < idle.mean_rate() <= 1.01  # a fraction of wall time
        assert meter(server, "kafka.server:type=KafkaRequestHandlerPool,name=ControlPlaneRequestHandlerAvgIdlePercent")
        assert meter(server, "kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=PLAINTEXT").count == 0
        assert meter(server, "kafka.network:type=Acceptor,name=ControlPlaneAcceptorBlockedPercent,listener=CONTROLLER")
    request_log = (tmp_path / "logs" / "kafka-request.log").read_text().splitlines()
    assert len(request_log) == 3
    line = request_log[0]
    assert line.endswith(" (kafka.request.logger)")
    doc = json.loads(line.split("] DEBUG Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
    assert doc["requestHeader"]["requestApiKeyName"] == "API_VERSIONS"
    assert doc["listener"] == "PLAINTEXT"
    assert doc["totalTimeMs"] >= doc["localTimeMs"] >= 0
    last = json.loads(request_log[-1].split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
    assert last["clientInformation"] == {"softwareName": "pw-test", "softwareVersion": "1.0"}  # KIP-511, per connection
    files = list((tmp_path / "metrics").glob("metrics-*.jsonl"))
    samples = [json.loads(ln) for f in files for ln in f.read_text().splitlines()]
    mbeans = {s["mbean"] for s in samples}
    assert "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize" in mbeans
    assert "kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=PLAINTEXT" in mbeans
    assert {s["broker_id"] for s in samples} == {1}


def test_server_log_startup_and_shutdown_lines(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), CONTROL_PLANE_PROPS) as server:
        port = server.bound_port("PLAINTEXT")
    log = (tmp_path / "logs" / "server.log").read_text()
    for text in (
        "INFO [KafkaServer id=1] starting (kafka.server.KafkaServer)",
        "INFO [SocketServer listenerType=ZK_BROKER, nodeId=1] Created data-plane acceptor and processors for "
        "endpoint : ListenerName(PLAINTEXT) (kafka.network.SocketServer)",
        "INFO [SocketServer listenerType=ZK_BROKER, nodeId=1] Created control-plane acceptor and processor for "
        "endpoint : ListenerName(CONTROLLER) (kafka.network.SocketServer)",
        "INFO [SocketServer listenerType=ZK_BROKER, nodeId=1] Started data-plane acceptor and processor(s) for "
        "endpoint : ListenerName(PLAINTEXT) (kafka.network.SocketServer)",
        f"INFO Awaiting socket connections on 127.0.0.1:{port}. (kafka.network.Acceptor)",
        "INFO [KafkaServer id=1] started (kafka.server.KafkaServer)",
        "INFO [data-plane Kafka Request Handler on Broker 1], shutting down (kafka.server.KafkaRequestHandlerPool)",
        "INFO [KafkaServer id=1] shut down completed (kafka.server.KafkaServer)",
    ):
        assert text in log, text
    with socket.socket() as s:  # the port is released
        s.bind(("127.0.0.1", port))


def test_processor_thread_names_follow_kafka(tmp_path: Path) -> None:
    with running_server(tmp_path, ScriptedApis(), {**CONTROL_PLANE_PROPS, "num.network.threads": 2}) as server:
        names = {t.name for t in threading.enumerate() if isinstance(t, Processor)}
        port = server.bound_port("PLAINTEXT")
        assert names == {
            "data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0",
            "data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-1",
            "control-plane-kafka-network-thread-1-ListenerName(CONTROLLER)-PLAINTEXT-2",
        }
        assert any(t.name == f"data-plane-kafka-socket-acceptor-ListenerName(PLAINTEXT)-PLAINTEXT-{port}"
                   for t in threading.enumerate())


def test_startup_fails_cleanly_when_a_port_is_taken(tmp_path: Path) -> None:
    from broker.config import KafkaConfig
    from broker.server import KafkaServer

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        config = KafkaConfig({"broker.id": "1", "log.dirs": str(tmp_path / "data"),
                              "listeners": f"PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{port}",
                              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                              "control.plane.listener.name": "CONTROLLER"})
        before = set(threading.enumerate())
        server = KafkaServer(config, lambda _s: ScriptedApis())
        with pytest.raises(OSError, match=f"Socket server failed to bind to 127.0.0.1:{port}"):
            server.startup()
        assert not [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert "Fatal error during KafkaServer startup" in (tmp_path / "logs" / "server.log").read_text()


def test_prometheus_endpoint_of_a_running_broker(tmp_path: Path) -> None:
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with running_server(tmp_path, ScriptedApis(), {**CONTROL_PLANE_PROPS, "prometheus.port": free}) as server:
        Client(server.bound_port("CONTROLLER")).call(API_VERSIONS, 0)
        assert server.prometheus is not None
        url = f"http://127.0.0.1:{server.prometheus.port}/metrics"
        body = ""

        def scraped_the_request() -> bool:  # RequestMetrics are updated once the response send completes
            nonlocal body
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = resp.read().decode()
            return "kafka_network_requestmetrics_requests_total" in body

        wait_until(scraped_the_request, what="the ApiVersions request in RequestMetrics")
    assert "kafka_network_requestchannel_controlplanerequestqueuesize 0.0" in body
    assert 'kafka_network_acceptor_acceptorblockedpercent_count{listener="PLAINTEXT"} 0.0' in body
    assert 'kafka_network_requestmetrics_requests_total{request="ApiVersions",version="0"} 1.0' in body
    assert "kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidle_percent" in body


def test_io_wait_ratio_window() -> None:
    from broker.network.idle import IoWaitRatio

    now = [0]
    ratio = IoWaitRatio(lambda: now[0])
    now[0] += 100_000_000
    assert math.isnan(ratio.ratio())  # nothing measured yet: unknown (null in the metrics), not "never idle"
    for _ in range(10):  # 10 s: waiting 0.25 s of every second
        now[0] += 250_000_000
        ratio.record(250_000_000)
        now[0] += 750_000_000
        ratio.record(0)
    assert abs(ratio.ratio() - 0.25) < 0.01
    for _ in range(40):  # then 40 s fully idle: the 30 s window forgets the busy past
        now[0] += 1_000_000_000
        ratio.record(1_000_000_000)
    assert ratio.ratio() > 0.95


class UnloggableApis(ScriptedApis):
    def handle(self, request: Request) -> Response:
        response = super().handle(request)
        response.request_json = {"not json": object()}  # the request log cannot write this
        return response


def test_a_failing_request_log_does_not_wedge_the_connection(tmp_path: Path) -> None:
    with running_server(tmp_path, UnloggableApis()) as server:
        c = Client(server.bound_port("PLAINTEXT"))
        for _ in range(3):
            assert c.call(API_VERSIONS, 0)["error_code"] == 0
        c.close()
    log = (tmp_path / "logs" / "server.log").read_text()
    assert "Failed to record metrics for RequestHeader(apiKey=API_VERSIONS" in log
