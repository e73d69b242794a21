"""The registration channel between brokers and the controller: HTTP/JSON on 127.0.0.1 (planewatch, not Kafka).

Kafka 2.x brokers register in ZooKeeper; planewatch has no ZooKeeper, so the controller serves the few operations
the brokers need (see :mod:`broker.cluster.controller`)::

    POST /register      {"id", "listeners": {name: [host, port]}, "protocols": {name: proto}, "rack"} -> {"epoch"}
    POST /heartbeat     {"id", "epoch"}                                -> {"error_code", "config_version"}
    POST /unregister    {"id", "epoch"}  (clean shutdown: the ephemeral node goes at once) -> {"error_code"}
    POST /create_topics {"topics": [{"name", "num_partitions", "replication_factor", "configs", "validate_only"}]}
                                                                                -> {"results": [...]}
    POST /alter_topic_configs   {"topic", "configs": {name: value}}  -> {"error_code", "error_message", "version"}
    POST /topic_configs         {"since": version}            -> {"version", "topics": {topic: {name: value}}}
    POST /alter_isr     {"id", "epoch", "topic", "partition", "leader_epoch", "isr"} -> {"error_code", ...}
    POST /create_partitions     {"topics": [{"name", "count", "assignments", "validate_only"}]} -> {"results"}
    POST /elect_leaders         {"election_type", "partitions": [[topic, partition]] | null}    -> {"results"}
    POST /alter_reassignments   {"moves": [{"topic", "partition", "replicas" | null}]}         -> {"results"}
    POST /list_reassignments    {"partitions": [[topic, partition]] | null}                    -> {"results"}
    GET  /status                                                                -> the controller's view

:class:`ControllerClient` is the broker side (urllib, bounded timeouts). Bad JSON answers 400 with a message.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from broker.cluster.controller import Controller

__all__ = ["MAX_BODY_BYTES", "ControllerClient", "ControllerHttpServer", "HeartbeatAnswer", "TopicConfigChanges"]

# A registration-channel request body larger than this is refused (413): the messages are tiny.
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """The controller's answer to a heartbeat: the error code (0 or STALE_BROKER_EPOCH) and the version of the
    latest topic config change (:mod:`broker.cluster.topic_config_store`)."""

    error_code: int
    config_version: int


@dataclass(frozen=True, slots=True)
class TopicConfigChanges:
    """The topic configs changed after a version: the current version and each changed topic's overrides."""

    version: int
    topics: dict[str, dict[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # no access log on stderr

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/status":
            self._answer(200, self.server.controller.status())
        else:
            self._answer(404, {"error": f"no such path {self.path}"})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        if size > MAX_BODY_BYTES:
            self._answer(413, {"error": "body too large"})
            return
        try:
            body = json.loads(self.rfile.read(size) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("expected a JSON object")
            self._answer(200, self._dispatch(body))
        except (ValueError, KeyError, TypeError) as exc:
            self._answer(400, {"error": f"bad request: {exc}"})
        except TimeoutError:
            self._answer(503, {"error": "controller busy"})

    def _dispatch(self, body: dict[str, Any]) -> dict[str, Any]:
        c = self.server.controller
        if self.path == "/register":
            listeners = {str(k): (str(v[0]), int(v[1])) for k, v in body["listeners"].items()}
            protocols = {str(k): str(v) for k, v in (body.get("protocols") or {}).items()}
            epoch = c.register(int(body["id"]), listeners, protocols, body.get("rack"))
            return {"epoch": epoch, "controller_id": c.controller_id}
        if self.path == "/heartbeat":
            # the version read first: a change stored meanwhile is announced by the next heartbeat
            version = c.topic_configs.version
            return {"error_code": c.heartbeat(int(body["id"]), int(body["epoch"])), "config_version": version}
        if self.path == "/unregister":
            return {"error_code": c.unregister(int(body["id"]), int(body["epoch"]))}
        if self.path == "/create_topics":
            return {"results": c.create_topics(list(body["topics"]))}
        if self.path == "/alter_topic_configs":
            return c.alter_topic_configs(str(body["topic"]), {str(k): str(v) for k, v in body["configs"].items()})
        if self.path == "/topic_configs":
            version, topics = c.topic_configs.changes_since(int(body["since"]))
            return {"version": version, "topics": topics}
        if self.path == "/alter_isr":
            return c.alter_isr(int(body["id"]), int(body["epoch"]), str(body["topic"]), int(body["partition"]),
                               int(body["leader_epoch"]), [int(r) for r in body["isr"]])
        if self.path == "/create_partitions":
            return {"results": c.create_partitions(list(body["topics"]))}
        if self.path == "/elect_leaders":
            return {"results": c.elect_leaders(int(body["election_type"]), _partitions(body.get("partitions")))}
        if self.path == "/alter_reassignments":
            return {"results": c.alter_reassignments(list(body["moves"]))}
        if self.path == "/list_reassignments":
            return {"results": c.list_reassignments(_partitions(body.get("partitions")))}
        raise KeyError(f"no such path {self.path}")


def _partitions(raw: Any) -> list[tuple[str, int]] | None:
    return None if raw is None else [(str(t), int(p)) for t, p in raw]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, controller: Controller, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.controller = controller


class ControllerHttpServer:
    """Serves the registration channel of a :class:`Controller` on 127.0.0.1."""

    def __init__(self, controller: Controller, port: int = 0) -> None:
        self._server = _Server(controller, port)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="controller-http", daemon=True)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


class ControllerClient:
    """The broker side of the registration channel."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                out = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise ConnectionError(f"controller answered {exc.code}: {exc.read()[:200]!r}") from None
        if not isinstance(out, dict):
            raise ConnectionError("controller answered no JSON object")
        return out

    def register(self, broker_id: int, listeners: dict[str, tuple[str, int]], protocols: dict[str, str],
                 rack: str | None) -> int:
        """Register; the new broker epoch."""
        out = self._call("/register", {"id": broker_id, "listeners": {k: list(v) for k, v in listeners.items()},
                                       "protocols": protocols, "rack": rack})
        return int(out["epoch"])

    def heartbeat(self, broker_id: int, epoch: int) -> int:
        """Keep the session; the error code (0 or STALE_BROKER_EPOCH)."""
        return self.keep_alive(broker_id, epoch).error_code

    def keep_alive(self, broker_id: int, epoch: int) -> HeartbeatAnswer:
        """Keep the session; the error code and the topic configs' version."""
        out = self._call("/heartbeat", {"id": broker_id, "epoch": epoch})
        return HeartbeatAnswer(int(out["error_code"]), int(out.get("config_version", 0)))

    def alter_topic_configs(self, topic: str, configs: dict[str, str]) -> dict[str, Any]:
        """Store a topic's new overrides (the whole set) at the controller: ``{error_code, error_message, version}``."""
        return self._call("/alter_topic_configs", {"topic": topic, "configs": configs})

    def topic_configs(self, since: int) -> TopicConfigChanges:
        """The overrides of the topics changed after version ``since`` (0: every topic with overrides)."""
        out = self._call("/topic_configs", {"since": since})
        topics = {str(t): {str(k): str(v) for k, v in c.items()} for t, c in (out.get("topics") or {}).items()}
        return TopicConfigChanges(int(out["version"]), topics)

    def unregister(self, broker_id: int, epoch: int) -> int:
        """Clean shutdown: leave the cluster now (leaders move without waiting for the session timeout)."""
        return int(self._call("/unregister", {"id": broker_id, "epoch": epoch})["error_code"])

    def create_topics(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Forward CreateTopics; per-topic results."""
        return list(self._call("/create_topics", {"topics": topics})["results"])

    def alter_isr(self, broker_id: int, epoch: int, topic: str, partition: int, leader_epoch: int,
                  isr: list[int]) -> dict[str, Any]:
        """Ask for an ISR change."""
        return self._call("/alter_isr", {"id": broker_id, "epoch": epoch, "topic": topic, "partition": partition,
                                         "leader_epoch": leader_epoch, "isr": isr})

    def create_partitions(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Forward CreatePartitions; per-topic results ``{name, error_code, error_message}``."""
        return list(self._call("/create_partitions", {"topics": topics})["results"])

    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """Forward ElectLeaders; per-partition results ``{topic, partition, error_code, error_message}``."""
        body = {"election_type": election_type, "partitions": None if partitions is None else
                [list(tp) for tp in partitions]}
        return list(self._call("/elect_leaders", body)["results"])

    def alter_reassignments(self, moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Forward AlterPartitionReassignments; per-partition results."""
        return list(self._call("/alter_reassignments", {"moves": moves})["results"])

    def list_reassignments(self, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """The reassignments in progress ``{topic, partition, replicas, adding, removing}``."""
        body = {"partitions": None if partitions is None else [list(tp) for tp in partitions]}
        return list(self._call("/list_reassignments", body)["results"])

    def status(self) -> dict[str, Any]:
        """The controller's view."""
        return self._call("/status")
