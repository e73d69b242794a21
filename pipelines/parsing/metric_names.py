"""How any spelling of a Kafka metric resolves to its canonical signal (:mod:`schemas.signals`), declared as data.

Resolution of a name (:mod:`pipelines.parsing.engine_metrics` does exactly this):

1. A Prometheus name is lower-cased. ``EXACT`` (special spellings whose attribute is implied, e.g. Strimzi/kafka-2_0_0
   ``..._requesthandleravgidle_percent`` = MeanRate) is consulted first.
2. Candidates, in order: the whole name; the name without jmx_exporter 1.x's ``_total`` counter suffix; that name
   without an attribute suffix (``_count``, ``_value``, ``_oneminuterate``, ... as Confluent and Bitnami rules emit).
   Each candidate is *compacted* (``_ : . -`` and spaces removed) and looked up in ``KEYS``, which holds, for every
   known metric, the compacted ``domain + type + name`` (Yammer) or ``domain + type + attribute`` (Kafka metrics),
   plus aliases (``AcceptorIdlePercent`` of the KIP-402 draft -> AcceptorBlockedPercent; ``requests`` ->
   RequestsPerSec, the kafka-2_0_0 rule's name).
3. The attribute is the suffix's (``_count`` -> Count), else a ``quantile`` label's percentile (0.99 ->
   99thPercentile), else the kind's default (gauge -> Value, meter/histogram -> Count; jmx_exporter drops the other
   attributes or names them).
4. ``socket-server-metrics`` (Kafka metrics, one attribute per metric) become CamelCase signals
   (``connection-count`` -> ConnectionCount). A name that resolves to nothing keeps its raw name as signal.

A JSON record naming an MBean (``kafka.network:type=RequestChannel,name=RequestQueueSize``) is looked up by the same
compacted key; its ``attribute`` field is the attribute.
"""

from __future__ import annotations

from schemas.signals import SOURCES, KafkaMetric, Signal

__all__ = [
    "ALIASES",
    "ATTRIBUTE_SUFFIXES",
    "EXACT",
    "FAMILIES",
    "KEYS",
    "KIND_DEFAULT_ATTRIBUTE",
    "SIGNALS",
    "compact",
]


# Spellings that name a metric besides its MBean: the KIP-402 draft's AcceptorIdlePercent, kafka-2_0_0's `requests`.
ALIASES: dict[Signal, tuple[str, ...]] = {
    Signal.AcceptorBlockedPercent: ("kafka.network.Acceptor.AcceptorIdlePercent",),
    Signal.ControlPlaneAcceptorBlockedPercent: ("kafka.network.Acceptor.ControlPlaneAcceptorIdlePercent",),
    Signal.RequestsPerSec: ("kafka.network.RequestMetrics.requests",),
    Signal.ErrorsPerSec: ("kafka.network.RequestMetrics.errors",),
}

SIGNALS: tuple[str, ...] = tuple(s.value for s in SOURCES)

_COMPACT_DROP = "_:.- "


def compact(text: str) -> str:
    """Lower-case without `_ : . -` and spaces: kafka_network_requestchannel_requestqueuesize and
    kafka.network:type=RequestChannel,name=RequestQueueSize (as domain+type+name) meet here."""
    return "".join(ch for ch in text.lower() if ch not in _COMPACT_DROP)


def _entry(signal: Signal, src: KafkaMetric) -> str:
    return f"{signal.value}|{src.mbean}|{src.kind}"


# Every signal of schemas.signals under the compacted name of the metric it comes from, and under its aliases. A
# meter named `...PerSec` is also known without the suffix: the kafka-2_0_0 and Strimzi rules match
# `name=(.+)PerSec\w*><>Count` and name it `kafka_$1_$2_$3_total` (IsrShrinksPerSec -> ..._isrshrinks_total).
_PER_SEC = "PerSec"
KEYS: dict[str, str] = {}
for _signal, _src in SOURCES.items():
    for _k in (_src.domain + _src.type + _src.name, *ALIASES.get(_signal, ())):
        KEYS[compact(_k)] = _entry(_signal, _src)
for _signal, _src in SOURCES.items():
    if _src.kind == "meter" and _src.name.endswith(_PER_SEC):
        KEYS.setdefault(compact(_src.domain + _src.type + _src.name.removesuffix(_PER_SEC)), _entry(_signal, _src))

# Spellings whose attribute the exporter's rule implies (FACTS.md section 3 table).
EXACT: dict[str, tuple[str, str]] = {
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent": (
        Signal.RequestHandlerAvgIdlePercent.value, "MeanRate"),
    "kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidle_percent": (
        Signal.ControlPlaneRequestHandlerAvgIdlePercent.value, "MeanRate"),
    # Kafka 4.x per-pool meters under the same kafka-2_0_0 rule (`...Percent\w*><>MeanRate` -> `..._percent`)
    "kafka_server_kafkarequesthandlerpool_brokerrequesthandleravgidle_percent": (
        Signal.BrokerRequestHandlerAvgIdlePercent.value, "MeanRate"),
    "kafka_server_kafkarequesthandlerpool_controllerrequesthandleravgidle_percent": (
        Signal.ControllerRequestHandlerAvgIdlePercent.value, "MeanRate"),
    # Confluent jmx-monitoring-stacks' kafka_broker.yml names the meter's OneMinuteRate so, as a GAUGE (no counter
    # suffix of jmx_exporter 1.x); its Count is the bare name. Read as Count, the two would make one series.
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total": (
        Signal.RequestHandlerAvgIdlePercent.value, "OneMinuteRate"),
}

ATTRIBUTE_SUFFIXES: dict[str, str] = {
    "count": "Count",
    "value": "Value",
    "meanrate": "MeanRate",
    "oneminuterate": "OneMinuteRate",
    "fiveminuterate": "FiveMinuteRate",
    "fifteenminuterate": "FifteenMinuteRate",
    "mean": "Mean",
    "min": "Min",
    "max": "Max",
    "stddev": "StdDev",
    "50thpercentile": "50thPercentile",
    "75thpercentile": "75thPercentile",
    "95thpercentile": "95thPercentile",
    "98thpercentile": "98thPercentile",
    "99thpercentile": "99thPercentile",
    "999thpercentile": "999thPercentile",
}
KIND_DEFAULT_ATTRIBUTE = {"gauge": "Value", "kafka": "Value", "meter": "Count", "histogram": "Count", "timer": "Count"}

# Kafka-metrics groups exported attribute by attribute: (lower-case name prefix, MBean). The rest of the name is the
# attribute; the signal is its CamelCase (connection_count / connection-count -> ConnectionCount).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("kafka_server_socket_server_metrics_", "kafka.server:type=socket-server-metrics"),
    ("kafka_server_socketservermetrics_", "kafka.server:type=socket-server-metrics"),
)
