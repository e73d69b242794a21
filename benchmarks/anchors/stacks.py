"""Each public rule set's monitoring stack as data, and the configuration files it runs with (pure: no I/O).

The three stacks differ in scrape and evaluation intervals and in the labels their service discovery attaches to a
Kafka target, and their rule expressions rely on those labels (``sum by (env)``, ``sum without(instance)``,
``kubernetes_pod_name=~".+-kafka-[0-9]+"``). So each stack gets its own Prometheus with its own intervals, and each
broker is given, per stack, the labels that stack's discovery would give it, with the run's cluster where the stack
puts its cluster or environment name. All of them send to one Alertmanager; each Prometheus adds the external label
``anchor=<stack>`` so that Alertmanager's list tells the stacks apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = [
    "ANCHORS_DIR",
    "ANCHOR_LABEL",
    "STACKS",
    "Stack",
    "Target",
    "alertmanager_config",
    "file_sd",
    "prometheus_config",
    "scrape_targets",
]

ANCHORS_DIR = Path(__file__).resolve().parents[2] / "conf" / "anchors"
# External label each anchor Prometheus puts on its alerts: the stack's name.
ANCHOR_LABEL = "anchor"
# Prometheus' own default; a JMX exporter over the include list here answers in well under a second.
SCRAPE_TIMEOUT_S = 10


@dataclass(frozen=True)
class Target:
    """One Prometheus endpoint of a cluster: ``host:port``, the node's id and its role (broker or controller)."""

    address: str
    node_id: int
    role: str


def _strimzi(run: str, target: Target) -> dict[str, str]:
    # Strimzi's PodMonitor relabelling: namespace and pod, also as kubernetes_namespace / kubernetes_pod_name
    kind = "kafka" if target.role == "broker" else "controller"
    pod = f"{run}-{kind}-{target.node_id}"
    return {"namespace": run, "kubernetes_namespace": run, "strimzi_io_name": run, "pod": pod,
            "kubernetes_pod_name": pod}


def _confluent(run: str, target: Target) -> dict[str, str]:
    # jmx-monitoring-stacks' static targets: env per environment, hostname from the address
    return {"env": run, "hostname": target.address.split(":")[0]}


def _grafana(run: str, target: Target) -> dict[str, str]:
    del target  # the integration's labels: job (the job name), instance (the address) and kafka_cluster
    return {"kafka_cluster": run}


@dataclass(frozen=True)
class Stack:
    """One public rule set with the stack it runs in."""

    name: str
    rules: Path
    scrape_interval_s: int
    evaluation_interval_s: int
    job: str  # the scrape job's name (the `job` label)
    run_label: str  # the label naming the cluster on the stack's alerts
    labels: Callable[[str, Target], dict[str, str]]  # (run, target) -> the labels the stack's discovery attaches
    intervals_from: str  # where the intervals come from

    def target_labels(self, run: str, target: Target) -> dict[str, str]:
        """The labels the stack's discovery would attach to ``target`` of cluster ``run``."""
        return self.labels(run, target)


STACKS: tuple[Stack, ...] = (
    Stack("strimzi", ANCHORS_DIR / "strimzi.rules.yml", 30, 30, "kafka-resources-metrics", "namespace", _strimzi,
          "Prometheus Operator defaults (Strimzi's Prometheus and PodMonitors set no interval)"),
    Stack("confluent", ANCHORS_DIR / "confluent.rules.yml", 15, 15, "kafka-broker", "env", _confluent,
          "jmx-monitoring-stacks prometheus.yml (a later revision scrapes every 60 s)"),
    Stack("grafana-mixin", ANCHORS_DIR / "grafana-kafka-mixin.rules.yml", 60, 60, "integrations/kafka",
          "kafka_cluster", _grafana, "Grafana agent scrape and rule evaluation defaults (the mixin ships neither)"),
)


def scrape_targets(cluster: Mapping[str, Any]) -> list[Target]:
    """Every Prometheus endpoint a ``cluster.json`` names (brokers, and KRaft controllers), as scrape targets."""
    out: list[Target] = []
    for role, key in (("broker", "brokers"), ("controller", "controllers")):
        for node in cluster.get(key) or ():
            url = node.get("prometheus")
            if url:
                out.append(Target(urlsplit(url).netloc, int(node["id"]), role))
    return out


def file_sd(stack: Stack, run: str, targets: Sequence[Target]) -> list[dict[str, Any]]:
    """The file_sd document of ``targets`` for ``stack`` (one group per target: each has its own labels)."""
    return [{"targets": [t.address], "labels": stack.target_labels(run, t)} for t in targets]


def prometheus_config(stack: Stack, *, alertmanager: str, targets_file: Path, scrape_interval_s: float | None = None,
                      evaluation_interval_s: float | None = None) -> str:
    """prometheus.yml of ``stack``: its intervals (overridable, for tests), its rule file, one file_sd job, the
    Alertmanager at ``alertmanager`` (host:port)."""
    scrape = stack.scrape_interval_s if scrape_interval_s is None else scrape_interval_s
    evaluation = stack.evaluation_interval_s if evaluation_interval_s is None else evaluation_interval_s
    doc = {
        "global": {"scrape_interval": f"{scrape:g}s", "evaluation_interval": f"{evaluation:g}s",
                   "scrape_timeout": f"{min(scrape, SCRAPE_TIMEOUT_S):g}s",
                   "external_labels": {ANCHOR_LABEL: stack.name}},
        "rule_files": [str(stack.rules)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        # the file is rewritten as clusters come and go; Prometheus watches it (the refresh is a fallback)
        "scrape_configs": [{"job_name": stack.job,
                            "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "5s"}]}],
    }
    return str(yaml.safe_dump(doc, sort_keys=False))


def alertmanager_config(webhook_url: str | None = None) -> str:
    """alertmanager.yml: every alert to one receiver that notifies nobody (the benchmark reads Alertmanager's API),
    or, with `webhook_url`, that notifies it of each alert on its own at once (group_wait 0: a page's delay is
    planewatch's, not the grouping's)."""
    if webhook_url is None:
        doc: dict[str, object] = {"route": {"receiver": "benchmark", "group_by": ["alertname", ANCHOR_LABEL]},
                                  "receivers": [{"name": "benchmark"}]}
    else:
        doc = {"route": {"receiver": "pager", "group_by": ["..."], "group_wait": "0s", "group_interval": "1s",
                         "repeat_interval": "1h"},
               "receivers": [{"name": "pager", "webhook_configs": [{"url": webhook_url, "send_resolved": False}]}]}
    return str(yaml.safe_dump(doc, sort_keys=False))
