"""What GET /cluster shows: the reference cluster's own description (DIR/cluster.json) plus live metadata asked
from the brokers over the Kafka protocol (confluent-kafka AdminClient.list_topics, bounded timeout).

cluster.json is written by `planewatch cluster`; only ``brokers[].id`` and a bootstrap address are relied upon,
the other fields (listeners, control listener, Prometheus endpoint) are read under the names Kafka uses when
present (``listeners`` as a dict or a Kafka ``listeners`` string, ``control.plane.listener.name``, ...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from api.kafka_admin import ClientLines

__all__ = ["ClusterError", "describe_cluster", "load_cluster_json", "normalize_broker"]

# Metadata request bound: a cluster that does not answer within this many seconds is reported, not waited for.
METADATA_TIMEOUT_S = 5.0
# Partitions listed at most (a big cluster's metadata could be huge; the page lists leaders, not everything).
MAX_PARTITIONS = 5000
# cluster.json larger than this is not a cluster description.
MAX_CLUSTER_JSON_BYTES = 1 << 20


class ClusterError(Exception):
    """cluster.json is missing or unreadable."""


def load_cluster_json(cluster_dir: Path) -> dict[str, Any]:
    """The parsed DIR/cluster.json (raises ClusterError)."""
    p = cluster_dir / "cluster.json"
    try:
        if p.stat().st_size > MAX_CLUSTER_JSON_BYTES:
            raise ClusterError(f"{p.name} is larger than {MAX_CLUSTER_JSON_BYTES} bytes")
        data = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise ClusterError(f"cannot read {p.name}: {type(e).__name__}") from e
    if not isinstance(data, dict):
        raise ClusterError(f"{p.name} is not a JSON object")
    return data


def _listeners(value: Any) -> dict[str, str]:
    """Listener name -> host:port from a dict, a list of {name, host, port}, or a Kafka `listeners` string."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out[str(k)] = str(v).split("://", 1)[-1]
    elif isinstance(value, str):
        for part in value.split(","):
            if "://" in part:
                name, addr = part.strip().split("://", 1)
                out[name] = addr
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and "name" in item:
                addr = item.get("address") or f"{item.get('host', '')}:{item.get('port', '')}"
                out[str(item["name"])] = str(addr)
            elif isinstance(item, str) and "://" in item:
                name, addr = item.split("://", 1)
                out[name] = addr
    return out


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def normalize_broker(b: dict[str, Any], host: str = "127.0.0.1") -> dict[str, Any]:
    """One broker entry of cluster.json in the API's shape (unknown fields dropped)."""
    listeners = _listeners(_first(b, "listeners", "advertised.listeners", "advertised_listeners") or {})
    prom = _first(b, "prometheus", "prometheus_url", "metrics_url", "prometheus_endpoint")
    port = _first(b, "prometheus_port", "metrics_port")
    if prom is None and port is not None:
        prom = f"http://{b.get('host', host)}:{port}/metrics"
    bport = b.get("port")
    return {
        "id": int(b["id"]),
        "host": b.get("host"),
        "port": int(bport) if isinstance(bport, int | str) and str(bport).isdigit() else None,
        "pid": b.get("pid") if isinstance(b.get("pid"), int) else None,
        "listeners": listeners,
        "control_listener": _first(b, "control_listener", "control.plane.listener.name", "control_plane_listener"),
        "prometheus": str(prom) if prom is not None else None,
    }


def describe_cluster(cluster_dir: Path) -> dict[str, Any]:
    """cluster.json normalised, plus live brokers, controller and partition leaders from the cluster itself."""
    info = load_cluster_json(cluster_dir)
    bootstrap = _first(info, "bootstrap.servers", "bootstrap", "bootstrap_servers")
    brokers = [normalize_broker(b) for b in info.get("brokers", []) if isinstance(b, dict) and "id" in b]
    if bootstrap is None and brokers:
        addrs = [next(iter(b["listeners"].values())) for b in brokers if b["listeners"]]
        bootstrap = ",".join(addrs) or None
    out: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "controller_id": None,
        "brokers": brokers,
        "partitions": [],
        "partitions_truncated": False,
        "metadata_error": None,
    }
    live: set[int] = set()
    if bootstrap is None:
        out["metadata_error"] = "cluster.json names no bootstrap servers"
    else:
        lines, admin = ClientLines(), None
        try:
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": str(bootstrap), "socket.timeout.ms": 5000}, logger=lines)
            md = admin.list_topics(timeout=METADATA_TIMEOUT_S)
            live = {int(i) for i in md.brokers}
            out["controller_id"] = md.controller_id if md.controller_id is not None and md.controller_id >= 0 else None
            parts = []
            for topic in sorted(md.topics):
                for pid, p in sorted(md.topics[topic].partitions.items()):
                    parts.append(
                        {
                            "topic": topic,
                            "partition": int(pid),
                            "leader": int(p.leader),
                            "replicas": [int(r) for r in p.replicas],
                            "isr": [int(r) for r in p.isrs],
                        }
                    )
            out["partitions_truncated"] = len(parts) > MAX_PARTITIONS
            out["partitions"] = parts[:MAX_PARTITIONS]
            known = {b["id"] for b in brokers}
            for bid, bm in md.brokers.items():
                if int(bid) not in known:
                    brokers.append(
                        {
                            "id": int(bid),
                            "host": bm.host,
                            "port": int(bm.port),
                            "pid": None,
                            "listeners": {},
                            "control_listener": None,
                            "prometheus": None,
                        }
                    )
        except Exception as e:  # KafkaException (timeout, transport): report it, keep what cluster.json says
            detail = lines.detail(admin) if admin is not None else ""
            out["metadata_error"] = f"{type(e).__name__}: {str(e)[:300]}{detail}"
    for b in brokers:
        b["live"] = b["id"] in live
    return out
