"""Prometheus exposition with the names prometheus/jmx_exporter's ``kafka-2_0_0.yml`` rules give Kafka's MBeans.

jmx_exporter renders each attribute as ``domain<k1=v1, k2=v2><>Attribute``, tries the rules in order (first match
wins, the pattern is wrapped as ``^.*(?:pattern).*$``), drops unmatched attributes, sanitises the name
(``[^a-zA-Z0-9:_]`` -> ``_``, runs collapsed) and lower-cases it (``lowercaseOutputName: true``). :data:`RULES` is that
rule file as data, in its order, so e.g.::

    kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize  Value
        -> kafka_network_requestchannel_controlplanerequestqueuesize
    kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=PLAINTEXT  Count
        -> kafka_network_acceptor_acceptorblockedpercent_count{listener="PLAINTEXT"}
    kafka.network:type=RequestMetrics,name=TotalTimeMs,request=LeaderAndIsr  99thPercentile
        -> kafka_network_requestmetrics_totaltimems{request="LeaderAndIsr",quantile="0.99"}
    kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent  MeanRate
        -> kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent

:class:`PrometheusServer` serves ``/metrics`` from a stdlib ``http.server`` on 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import math
import re
import threading
from dataclasses import dataclass

from broker.metrics.registry import MetricName, MetricsRegistry

__all__ = ["RULES", "PrometheusServer", "Rule", "prometheus_name", "render"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One jmx_exporter rule: pattern, name template, type, label templates."""

    pattern: str
    name: str
    type: str
    labels: tuple[tuple[str, str], ...] = ()

    def regex(self) -> re.Pattern[str]:
        return re.compile(r"^.*(?:" + self.pattern + r").*$")


_W = r"kafka.(\w+)<type=(.+), name=(.+)"
RULES: tuple[Rule, ...] = (
    Rule(r"kafka.server<type=(.+), name=(.+), clientId=(.+), topic=(.+), partition=(.*)><>Value", "kafka_server_$1_$2",
         "GAUGE", (("clientId", "$3"), ("topic", "$4"), ("partition", "$5"))),
    Rule(r"kafka.server<type=(.+), name=(.+), clientId=(.+), brokerHost=(.+), brokerPort=(.+)><>Value",
         "kafka_server_$1_$2", "GAUGE", (("clientId", "$3"), ("broker", "$4:$5"))),
    Rule(r"kafka.coordinator.(\w+)<type=(.+), name=(.+)><>Value", "kafka_coordinator_$1_$2_$3", "GAUGE"),
    Rule(_W + r"PerSec\w*, (.+)=(.+), (.+)=(.+)><>Count", "kafka_$1_$2_$3_total", "COUNTER",
         (("$4", "$5"), ("$6", "$7"))),
    Rule(_W + r"PerSec\w*, (.+)=(.+)><>Count", "kafka_$1_$2_$3_total", "COUNTER", (("$4", "$5"),)),
    Rule(_W + r"PerSec\w*><>Count", "kafka_$1_$2_$3_total", "COUNTER"),
    Rule(r"kafka.server<type=(.+), client-id=(.+)><>([a-z-]+)", "kafka_server_quota_$3", "GAUGE",
         (("resource", "$1"), ("clientId", "$2"))),
    Rule(r"kafka.server<type=(.+), user=(.+), client-id=(.+)><>([a-z-]+)", "kafka_server_quota_$4", "GAUGE",
         (("resource", "$1"), ("user", "$2"), ("clientId", "$3"))),
    Rule(_W + r", (.+)=(.+), (.+)=(.+)><>Value", "kafka_$1_$2_$3", "GAUGE", (("$4", "$5"), ("$6", "$7"))),
    Rule(_W + r", (.+)=(.+)><>Value", "kafka_$1_$2_$3", "GAUGE", (("$4", "$5"),)),
    Rule(_W + r"><>Value", "kafka_$1_$2_$3", "GAUGE"),
    Rule(_W + r", (.+)=(.+), (.+)=(.+)><>Count", "kafka_$1_$2_$3_count", "COUNTER", (("$4", "$5"), ("$6", "$7"))),
    Rule(_W + r", (.+)=(.*), (.+)=(.+)><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE",
         (("$4", "$5"), ("$6", "$7"), ("quantile", "0.$8"))),
    Rule(_W + r", (.+)=(.+)><>Count", "kafka_$1_$2_$3_count", "COUNTER", (("$4", "$5"),)),
    Rule(_W + r", (.+)=(.*)><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE", (("$4", "$5"), ("quantile", "0.$6"))),
    Rule(_W + r"><>Count", "kafka_$1_$2_$3_count", "COUNTER"),
    Rule(_W + r"><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE", (("quantile", "0.$4"),)),
    Rule(_W + r"Percent\w*><>MeanRate", "kafka_$1_$2_$3_percent", "GAUGE"),
    Rule(_W + r"Percent\w*><>Value", "kafka_$1_$2_$3_percent", "GAUGE"),
    Rule(_W + r"Percent\w*, (.+)=(.+)><>Value", "kafka_$1_$2_$3_percent", "GAUGE", (("$4", "$5"),)),
)
_SANITIZE = re.compile(r"[^a-zA-Z0-9:_]")
_RUNS = re.compile(r"__+")
_GROUP_REF = re.compile(r"\$(\d+)")


def _jmx_string(name: MetricName, attribute: str, value: float) -> str:
    props = [("type", name.type), *([("name", name.name)] if name.name else []), *name.tags]
    return f"{name.domain}<{', '.join(f'{k}={v}' for k, v in props)}><>{attribute}: {value!r}"


@functools.lru_cache(maxsize=8)
def _compiled(rules: tuple[Rule, ...]) -> tuple[tuple[Rule, re.Pattern[str]], ...]:
    return tuple((rule, rule.regex()) for rule in rules)


# The reference broker's own rules, compiled once: `render` names every sample of every scrape with them.
_RULES_COMPILED = _compiled(RULES)


def _substitute(template: str, match: re.Match[str]) -> str:
    return _GROUP_REF.sub(lambda m: match.group(int(m.group(1))) or "", template)


def prometheus_name(name: MetricName, attribute: str, value: float = 0.0, rules: tuple[Rule, ...] = RULES
                    ) -> tuple[str, str, dict[str, str]] | None:
    """(metric name, type, labels) for one MBean attribute of `value` under `rules`, or None when no rule matches
    (jmx_exporter drops it). jmx_exporter matches ``domain<key=value, ...><>attribute: value``."""
    text = _jmx_string(name, attribute, float(value))
    for rule, regex in _RULES_COMPILED if rules is RULES else _compiled(rules):
        match = regex.match(text)
        if match is None:
            continue
        metric = _RUNS.sub("_", _SANITIZE.sub("_", _substitute(rule.name, match))).lower()
        labels = {
            _RUNS.sub("_", _SANITIZE.sub("_", _substitute(k, match))): _substitute(v, match) for k, v in rule.labels
        }
        return metric, rule.type, labels
    return None


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(registry: MetricsRegistry) -> str:
    """The registry in Prometheus text exposition format 0.0.4."""
    families: dict[str, tuple[str, list[str]]] = {}
    for name, attribute, value in registry.samples():
        mapped = prometheus_name(name, attribute, value)
        if mapped is None:
            continue
        metric, mtype, labels = mapped
        label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        line = f"{metric}{{{label_text}}} {_format_value(value)}" if label_text else f"{metric} {_format_value(value)}"
        families.setdefault(metric, (mtype.lower() if mtype != "UNTYPED" else "untyped", []))[1].append(line)
    out: list[str] = []
    for metric, (mtype, lines) in families.items():
        out.append(f"# TYPE {metric} {'counter' if mtype == 'counter' else 'gauge'}")
        out.extend(dict.fromkeys(lines))
    return "\n".join(out) + "\n"


class PrometheusServer:
    """``GET /metrics`` on 127.0.0.1:port (port 0 = an ephemeral port, see :attr:`port`)."""

    def __init__(self, registry: MetricsRegistry, port: int, host: str = "127.0.0.1") -> None:
        registry_ref = registry

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404, "only /metrics")
                    return
                body = render(registry_ref).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                del format, args  # no access log on stderr

        self._httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="prometheus-exporter", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(5)
        self._httpd.server_close()
