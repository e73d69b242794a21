"""`planewatch control`: send LeaderAndIsr / UpdateMetadata / StopReplica to a broker, as a controller would.

Examples::

    planewatch control leader-and-isr --bootstrap 127.0.0.1:9093 --controller-id 1 --controller-epoch 5 \\
        --topic t --partitions 0-9 --leader 1 --leader-epoch 3 --isr 1 --replicas 1 [--version 5]
    planewatch control update-metadata --broker-config conf/broker.properties --controller-epoch 5 \\
        --topic t --partitions 0-9 --leader 1 --leader-epoch 3 --isr 1 --replicas 1
    planewatch control stop-replica --bootstrap 127.0.0.1:9093 --controller-epoch 5 --topic t --partitions 9 --delete

The request goes to ``--bootstrap`` as given, or, with ``--broker-config``, to the broker's control-plane listener
when it has one and else to its inter-broker listener (KIP-291). The controller-side state-change lines (TRACE
included) go to ``<logs-dir>/state-change.log``, the send thread's to ``<logs-dir>/controller.log``. The response is
printed as KIP-673 JSON; the exit code is 0 when the broker answered (whatever its error codes), 1 on a transport
error (no answer within ``--timeout-ms``), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

DEFAULT_VERSIONS = {"leader-and-isr": 5, "update-metadata": 7, "stop-replica": 3}  # what a 2.8 controller sends
VERSION_RANGES = {"leader-and-isr": (0, 7), "update-metadata": (0, 8), "stop-replica": (0, 4)}


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of broker ids, got {text!r}") from None


def _common(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap", metavar="HOST:PORT", help="the broker endpoint to send to")
    where.add_argument("--broker-config", metavar="FILE",
                       help="the broker's properties: send to its control listener, else its inter-broker listener")
    p.add_argument("--broker-id", type=int, help="the target broker's id (default: from --broker-config or Metadata)")
    p.add_argument("--controller-id", type=int, default=1, help="controller id (default 1)")
    p.add_argument("--controller-epoch", type=int, required=True, help="controller epoch")
    p.add_argument("--broker-epoch", type=int, default=-1, help="the target broker's epoch (-1 = unknown)")
    p.add_argument("--max-broker-epoch", type=int, help="the max_broker_epoch tagged field (flexible versions)")
    p.add_argument("--version", type=int, help="request version (default: what a 2.8 controller sends)")
    p.add_argument("--topic", required=True, help="topic name")
    p.add_argument("--partitions", required=True, help="partitions: 0-9 or 0,3,5-7")
    p.add_argument("--timeout-ms", type=int, default=30_000, help="request.timeout.ms; also the overall deadline")
    p.add_argument("--logs-dir", default=None, help="controller logs dir (default var/controller-<id>/logs)")


def _partition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--leader", type=int, required=True, help="leader broker id")
    p.add_argument("--leader-epoch", type=int, required=True, help="leader epoch")
    p.add_argument("--isr", type=_int_list, required=True, help="ISR broker ids, e.g. 1,2")
    p.add_argument("--replicas", type=_int_list, required=True, help="replica broker ids, e.g. 1,2")
    p.add_argument("--partition-epoch", type=int, default=0, help="partition epoch (zkVersion)")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the sub-commands and their arguments."""
    sub = parser.add_subparsers(dest="request", metavar="REQUEST", required=True)
    lai = sub.add_parser("leader-and-isr", help="send a LeaderAndIsr request",
                         description="Send a LeaderAndIsr request for a topic's partitions.")
    _common(lai)
    _partition_args(lai)
    lai.add_argument("--is-new", action="store_true", help="mark the partitions as new")
    um = sub.add_parser("update-metadata", help="send an UpdateMetadata request",
                        description="Send an UpdateMetadata request (partition states + live brokers).")
    _common(um)
    _partition_args(um)
    um.add_argument("--offline", type=_int_list, default=[], help="offline replica ids")
    um.add_argument("--live-broker", action="append", default=[], metavar="ID@LISTENER://HOST:PORT[,...]",
                    help="a live broker and its endpoints (repeatable); default: the target broker's endpoints")
    sr = sub.add_parser("stop-replica", help="send a StopReplica request",
                        description="Send a StopReplica request for a topic's partitions.")
    _common(sr)
    sr.add_argument("--delete", action="store_true", help="delete the partitions")
    sr.add_argument("--leader-epoch", type=int, default=-1, help="leader epoch (v3+; -1 none, -2 deleting)")


def _parse_endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _parse_live_broker(text: str) -> tuple[int, dict[str, tuple[str, int]]]:
    bid, sep, rest = text.partition("@")
    if not sep or not bid.strip().isdigit():
        raise ValueError(f"expected ID@LISTENER://HOST:PORT[,...], got {text!r}")
    endpoints: dict[str, tuple[str, int]] = {}
    for item in rest.split(","):
        name, sep2, addr = item.strip().partition("://")
        if not sep2:
            raise ValueError(f"expected LISTENER://HOST:PORT in {text!r}")
        endpoints[name.upper()] = _parse_endpoint(addr)
    return int(bid), endpoints


def _discover_broker_id(host: str, port: int, timeout_s: float) -> int:
    """Ask the broker's Metadata (v1, no topics) which broker id answers on host:port."""
    import socket
    import struct

    from broker.protocol import ApiKey, ProtocolError, decode_response, encode_request

    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(encode_request(ApiKey.METADATA, 1, 0, "planewatch-control", {"topics": []}))
        size = struct.unpack(">i", _recv(s, 4))[0]
        try:
            _, body = decode_response(ApiKey.METADATA, 1, _recv(s, size))
        except ProtocolError as exc:
            raise ConnectionError(f"not a Kafka Metadata answer: {exc}") from None
    brokers = body["brokers"]
    exact = [b["node_id"] for b in brokers if b["port"] == port]
    if len(exact) == 1:
        return int(exact[0])
    if len(brokers) == 1:
        return int(brokers[0]["node_id"])
    raise ValueError(f"cannot tell which broker answers on {host}:{port}; pass --broker-id")


def _recv(s: Any, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return buf


def run(args: argparse.Namespace) -> int:
    """Send one control request and print the answer."""
    from pathlib import Path

    from broker.controller import ControllerChannelManager, ControlRequestSender, select_control_endpoint
    from broker.controller.requests import BrokerNode, endpoints_of, parse_partitions
    from broker.log4j import Log4j
    from broker.protocol import API_NAMES, ErrorCode, response_to_json
    from broker.state.model import CachedPartition, LeaderAndIsrPartition, StopReplicaPartition

    kind: str = args.request
    version = args.version if args.version is not None else DEFAULT_VERSIONS[kind]
    lo, hi = VERSION_RANGES[kind]
    try:
        if not lo <= version <= hi:
            raise ValueError(f"{kind} version must be {lo}-{hi}, not {version}")
        partitions = parse_partitions(args.partitions)
        advertised: dict[str, tuple[str, int]] = {}
        protocols: dict[str, str] = {}
        if args.broker_config:
            from broker.config import load_config

            cfg = load_config(args.broker_config)
            advertised = {ep.name: (ep.host or "127.0.0.1", ep.port) for ep in cfg.advertised_listeners}
            protocols = {ep.name: ep.security_protocol for ep in cfg.advertised_listeners}
            broker_id = args.broker_id if args.broker_id is not None else cfg.broker_id
            node = select_control_endpoint(broker_id, advertised, cfg.control_plane_listener_name,
                                           cfg.inter_broker_listener_name)
        else:
            host, port = _parse_endpoint(args.bootstrap)
            broker_id = args.broker_id
            if broker_id is None:
                try:
                    broker_id = _discover_broker_id(host, port, args.timeout_ms / 1000)
                except OSError as exc:
                    print(f"planewatch control: transport error asking {host}:{port} for its broker id: {exc}",
                          file=sys.stderr)
                    return 1
            node = BrokerNode(broker_id, host, port, "--bootstrap")
            advertised = {"PLAINTEXT": (host, port)}
    except (ValueError, OSError) as exc:
        print(f"planewatch control: {exc}", file=sys.stderr)
        return 2

    logs_dir = Path(args.logs_dir or f"var/controller-{args.controller_id}/logs")
    log4j = Log4j().configure(logs_dir, state_change_level="TRACE", controller_log=True)
    channel = ControllerChannelManager(args.controller_id, args.controller_epoch, log4j=log4j,
                                       request_timeout_ms=args.timeout_ms)
    try:
        channel.add_broker(node)
        sender = ControlRequestSender(channel)
        common: dict[str, Any] = {"broker_epoch": args.broker_epoch, "max_broker_epoch": args.max_broker_epoch,
                                  "timeout_ms": args.timeout_ms}
        if kind == "leader-and-isr":
            states = [LeaderAndIsrPartition(args.topic, p, args.controller_epoch, args.leader, args.leader_epoch,
                                            tuple(args.isr), args.partition_epoch, tuple(args.replicas),
                                            is_new=args.is_new) for p in partitions]
            leader_nodes = [BrokerNode(node.id, *advertised.get("PLAINTEXT", (node.host, node.port)))] \
                if args.leader == node.id else []
            futures = [sender.send_leader_and_isr(node.id, version, states, live_leaders=leader_nodes, **common)]
        elif kind == "update-metadata":
            cached = [CachedPartition(args.topic, p, args.controller_epoch, args.leader, args.leader_epoch,
                                      tuple(args.isr), args.partition_epoch, tuple(args.replicas), tuple(args.offline))
                      for p in partitions]
            live = [endpoints_of(bid, eps) for bid, eps in map(_parse_live_broker, args.live_broker)] or \
                [endpoints_of(node.id, advertised, protocols)]
            epochs = {node.id: args.broker_epoch}
            um = sender.send_update_metadata([node.id], version, cached, live, broker_epochs=epochs,
                                             max_broker_epoch=args.max_broker_epoch, timeout_ms=args.timeout_ms)
            futures = list(um.values())
        else:
            stops = [StopReplicaPartition(args.topic, p, args.leader_epoch, args.delete) for p in partitions]
            futures = sender.send_stop_replica(node.id, version, stops, **common)
        rc = 0
        for fut in futures:
            try:
                resp = fut.result(timeout=args.timeout_ms / 1000 + 5)
            except (TimeoutError, ConnectionError, OSError) as exc:
                print(f"planewatch control: transport error talking to broker {node}: {exc}", file=sys.stderr)
                rc = 1
                continue
            import json

            codes = _codes(resp.body)
            names = sorted({_error_name(ErrorCode, c) for c in codes})
            print(f"{API_NAMES[resp.api_key]} v{resp.version} -> broker {node.id} at {node.host}:{node.port} "
                  f"({node.listener}): correlationId {resp.correlation_id}, error codes {', '.join(names)}")
            print(json.dumps(response_to_json(resp.api_key, resp.version, resp.body), default=str))
        return rc
    except ValueError as exc:
        print(f"planewatch control: {exc}", file=sys.stderr)
        return 2
    finally:
        channel.shutdown()
        log4j.close()


def _codes(body: dict[str, Any]) -> list[int]:
    codes = [int(body.get("error_code", 0))]
    for e in body.get("partition_errors") or ():
        codes.append(int(e["error_code"]))
    for t in body.get("topics") or ():
        codes.extend(int(e["error_code"]) for e in t.get("partition_errors") or ())
    return codes


def _error_name(enum: Any, code: int) -> str:
    try:
        return f"{enum(code).name}({code})"
    except ValueError:
        return str(code)
