"""Kafka's series read from the operator's Prometheus for `planewatch_prometheus_server`: the query window, the HTTP
query, and the samples turned into each target's Prometheus text (pure, but for `query_samples`' request).

Theory of operation:

* **Raw samples, not a graph**: an instant query of a range selector (`{__name__=~"kafka_.+"}[600000ms]` at time
  T) answers every sample Prometheus holds in the range, at the exporter's scrape times, unaligned and not
  interpolated (a `query_range` would step and fill). So a read is what a scrape of that target answered then.
* **A target's samples come in order**: Prometheus scrapes a target (`job`, `instance`, and the labels the mapping
  rules read) in one loop, each scrape's samples at one timestamp, appended at once (head isolation). A target's
  newest sample time read so far is thus its position: a read keeps only its samples after it, so each sample is
  read once. A scrape's samples become visible when the scrape ends, at most its scrape timeout after their
  timestamp: each read's window (`Window`) therefore starts LATE_VISIBLE_MS before the horizon the last read reached
  (`until`) and ends now, at most `max_window_ms` later (a catch-up goes on over several batches), so a sample that
  became visible after a read is read by the next one, a new target's first scrape too. Where the window begins
  depends on no target: one that is gone holds nothing back. The horizon is the newest sample read at the live edge
  (Prometheus's own clock, not planewatch's), the window's end in the past.
* **One selector** (`{__name__=~"kafka_.+|process_start_time_seconds"}`, `{job=~"kafka|kraft"}`): one query sees
  every target at one instant (two queries would each see a scrape that landed between them or not, and a target's
  position could pass a sample one of them had not seen). The default asks for every process's start to have the
  brokers'; a target with nothing else is not a broker and is not read (no record: it was never Kafka's).
* **Cluster and broker from labels**: `LabelRule`s (presets in :data:`LABEL_PRESETS`, for the label sets of the
  jmx_exporter, Strimzi's PodMonitors and Confluent's jmx-monitoring-stacks) name each target's cluster and broker;
  a target no rule maps becomes one `source-error` record with its labels (quarantined, counted), its samples read
  past. The labels the rules read, `job` and `instance` leave the lines (a direct scrape does not have them).
* **Text**: each target's samples become exposition lines `name{labels} value timestamp_ms`, series sorted by
  labels, samples by time: the same samples give the same bytes, so a replayed read yields the batch it logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from jobs import SourceRefused
from jobs.sources.envelopes import naming_problem
from jobs.sources.secrets import read_secret
from schemas.signals import SOURCES, Signal

__all__ = [
    "DEFAULT_CATCH_UP_S",
    "DEFAULT_MATCH",
    "DEFAULT_MAX_WINDOW_S",
    "LABEL_PRESETS",
    "QUERY_TIMEOUT_S",
    "START_SERIES",
    "LabelError",
    "LabelRule",
    "QueryAnswer",
    "ServerAuth",
    "TargetSamples",
    "Window",
    "label_rules",
    "map_target",
    "query_samples",
    "rules_json",
    "target_key",
    "target_samples",
    "window",
]

# jmx_exporter's process collector: when a broker's JVM started, exported beside every rule set. It tells a broker's
# incarnations apart (roll safety drops a request sent to the process before; metric warm-up); every process an
# exporter runs in exports it, so a target with no other series is not a broker (target_samples leaves it out).
START_SERIES = SOURCES[Signal.ProcessStartTimeSeconds].mbean
# Kafka's series under every common rule set (the jmx_exporter's kafka-2_0_0, Strimzi's, Confluent's): their names
# start with `kafka_`; with them, each broker's process start. An operator narrows it with their own selectors
# (`{job="kafka"}`).
DEFAULT_MATCH = f'{{__name__=~"kafka_.+|{START_SERIES}"}}'
# A first start reads this far back: the hour before planewatch started, what an operator looks at first.
DEFAULT_CATCH_UP_S = 3600.0
# One read spans at most this much of Prometheus' time: 10 minutes of a 15 s scrape is 40 samples a series, a few
# MiB of JSON for a broker's series; a catch-up of an hour is six batches.
DEFAULT_MAX_WINDOW_S = 600.0
# A query answers within this many seconds or the batch records it failed (Prometheus' own query timeout is 2 min;
# the read blocks the metrics trigger, so a hung server must not hold it long).
QUERY_TIMEOUT_S = 10.0
# An answer larger than this is refused (a selector matching every series of a large Prometheus): the window is
# then too wide or the selector too broad, which the error says.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
# A scrape's samples carry its start time and become visible when it ends: at most its scrape_timeout later (10 s by
# default, never over the scrape interval; operators scrape every 15-60 s). Each read looks back this far before the
# last read's horizon, so a slow scrape's samples are read by the next read, and planewatch's clock may be off
# Prometheus's by a few seconds.
LATE_VISIBLE_MS = 30_000
# A read spans at least this much (a window of LATE_VISIBLE_MS would never move on); failed reads halve the window
# down to it (an answer too large, Prometheus's query.max-samples).
MIN_WINDOW_MS = 2 * LATE_VISIBLE_MS
# The labels Prometheus gives every target (`job`, `instance`): they name the target, not the series, and leave the
# lines like the labels the mapping rules read.
TARGET_LABELS = ("job", "instance")
# Answers that say the credentials are wrong: retrying cannot help (like a refused Kafka login, the run stops).
REFUSED_STATUSES = (401, 403)


class LabelError(ValueError):
    """A label rule that cannot work: an unknown preset, a bad regex, no `cluster`/`broker` group."""


@dataclass(frozen=True)
class LabelRule:
    """`pattern` (a regex, searched) over the value of label `label`: its named groups `cluster` and `broker` name
    the target's; `cluster` names the cluster when the pattern has no such group."""

    label: str
    pattern: str
    cluster: str | None = None

    def __post_init__(self) -> None:
        problem = naming_problem(self.pattern, self.cluster)
        if problem:
            raise LabelError(f"label rule on {self.label}: {problem}")


_WHOLE_CLUSTER = r"^(?P<cluster>.+)$"
_TRAILING_ID = r"-(?P<broker>[0-9]+)$"
#: Label presets. `labels`: `cluster` and `broker_id` (or `node_id`) labels, as a scrape config's `labels:` or a
#: relabeling sets them (planewatch's demo does). `jmx_exporter`: a static scrape of the jmx_exporter agent
#: (kafka-2_0_0 rules) at `instance` `kafka-07.prod-us:7071` (broker 7 of prod-us) or `kafka-7:7071` with a
#: `cluster`/`env` label. `strimzi`: Strimzi's PodMonitor (`strimzi_io_cluster` by labelmap, the broker from the pod
#: name `<cluster>-kafka-<id>` or `<cluster>-<pool>-<id>` in `pod` or the older `kubernetes_pod_name`).
#: `confluent`: jmx-monitoring-stacks' prometheus.yml (`env` names the cluster, `hostname` `kafka1` the broker).
LABEL_PRESETS: dict[str, tuple[LabelRule, ...]] = {
    "labels": (LabelRule("cluster", _WHOLE_CLUSTER), LabelRule("broker_id", r"^(?P<broker>[0-9]+)$"),
               LabelRule("node_id", r"^(?P<broker>[0-9]+)$")),
    "jmx_exporter": (LabelRule("cluster", _WHOLE_CLUSTER), LabelRule("env", _WHOLE_CLUSTER),
                     LabelRule("instance", r"^[A-Za-z][A-Za-z_-]*?(?P<broker>[0-9]+)"
                                           r"(?:\.(?P<cluster>[A-Za-z][A-Za-z0-9_-]*))?(?:[.:]|$)")),
    "strimzi": (LabelRule("strimzi_io_cluster", _WHOLE_CLUSTER), LabelRule("pod", _TRAILING_ID),
                LabelRule("kubernetes_pod_name", _TRAILING_ID)),
    "confluent": (LabelRule("env", _WHOLE_CLUSTER), LabelRule("hostname", r"[A-Za-z_-](?P<broker>[0-9]+)$"),
                  LabelRule("instance", r"^[A-Za-z][A-Za-z_-]*?(?P<broker>[0-9]+)(?::[0-9]+)?$")),
}


def label_rules(items: Iterable[Any]) -> tuple[LabelRule, ...]:
    """`sources.prometheus_server.mapping`: preset names and `{label, pattern[, cluster]}` rules, in order.

    Raises:
        LabelError: an unknown preset, a malformed rule, a bad regex, a rule naming neither cluster nor broker.
    """
    out: list[LabelRule] = []
    for item in items:
        if isinstance(item, str):
            if item not in LABEL_PRESETS:
                raise LabelError(f"unknown label preset {item!r} (known: {', '.join(LABEL_PRESETS)})")
            out += LABEL_PRESETS[item]
            continue
        keys = set(item) if isinstance(item, Mapping) else set()
        if not isinstance(item, Mapping) or keys - {"label", "pattern", "cluster"} or not {"label", "pattern"} <= keys:
            raise LabelError(f"a label rule is a preset name or {{label, pattern[, cluster]}}, not {item!r}")
        out.append(LabelRule(str(item["label"]), str(item["pattern"]), item.get("cluster")))
    return tuple(out)


def rules_json(rules: Sequence[LabelRule]) -> str:
    """Rules as the JSON list a data source option carries (:func:`label_rules` reads it back)."""
    return json.dumps([{"label": r.label, "pattern": r.pattern, "cluster": r.cluster} for r in rules])


def map_target(labels: Mapping[str, str], rules: Sequence[LabelRule], cluster: str | None
               ) -> tuple[str | None, int | None]:
    """(cluster, broker id) of a target's labels: per group the first rule that gives it; `cluster` (the pipeline's
    setting), when set, names every target's cluster."""
    found_cluster, broker = cluster, None
    for rule in rules:
        value = labels.get(rule.label)
        if value is None or (found_cluster is not None and broker is not None):
            continue
        m = re.search(rule.pattern, value)
        if m is None:
            continue
        groups = m.groupdict()
        if found_cluster is None:
            found_cluster = groups.get("cluster") or rule.cluster
        if broker is None and groups.get("broker"):
            broker = int(groups["broker"])
    return found_cluster, broker


# --------------------------------------------------------------------------------------------------------- window


@dataclass(frozen=True)
class Window:
    """The samples a read asks for: (`start_ms`, `end_ms`], epoch milliseconds."""

    start_ms: int
    end_ms: int


def window(until_ms: int, now_ms: int, max_window_ms: int) -> Window:
    """The next read's window: from LATE_VISIBLE_MS before the horizon the last read reached (`until_ms`) to now, at
    most `max_window_ms` (at least MIN_WINDOW_MS) wide."""
    start = until_ms - LATE_VISIBLE_MS
    return Window(start, max(start, min(now_ms, start + max(max_window_ms, MIN_WINDOW_MS))))


def next_until(w: Window, until_ms: int, now_ms: int, newest_ms: int | None) -> int:
    """The horizon after a read of `w`: its end when it lies in the past (a catch-up, a gap in Prometheus's data:
    the reads move on), else the newest sample read (Prometheus's clock), never back."""
    if w.end_ms < now_ms:
        return max(until_ms, w.end_ms)
    return max(until_ms, newest_ms if newest_ms is not None else until_ms)


# ---------------------------------------------------------------------------------------------------------- query


@dataclass(frozen=True)
class ServerAuth:
    """How planewatch authenticates to Prometheus: a bearer token or basic auth (secrets from a file or a variable,
    read when a request is made), and TLS (`ca_file`: the CA that signed the server's certificate)."""

    bearer_token_file: str | None = None
    bearer_token_env: str | None = None
    username: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    ca_file: str | None = None

    def headers(self) -> dict[str, str]:
        """The Authorization header, with its secret read now (none: no header)."""
        if self.bearer_token_file or self.bearer_token_env:
            token = read_secret("sources.prometheus_server.auth", self.bearer_token_file, self.bearer_token_env)
            return {"Authorization": f"Bearer {token}"}
        return {}

    def basic(self) -> tuple[str, str] | None:
        if self.username is None:
            return None
        return self.username, read_secret("sources.prometheus_server.auth", self.password_file, self.password_env)


@dataclass
class QueryAnswer:
    """What a read got: the series (`metric` labels and `values` [[seconds, "value"], ...] each), Prometheus'
    warnings (a partial answer), or why it failed (`error`; then no series)."""

    series: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


class _Failed(Exception):
    """A read that failed: its reason."""


def _range_query(selector: str, w: Window) -> dict[str, str]:
    return {"query": f"{selector}[{max(1, w.end_ms - w.start_ms)}ms]", "time": f"{w.end_ms / 1000:.3f}"}


def _answer(client: httpx.Client, url: str, selector: str, w: Window) -> tuple[list[dict[str, Any]], list[str]]:
    """One selector's series and warnings, the body read up to MAX_ANSWER_BYTES; _Failed says why not."""
    with client.stream("GET", "/api/v1/query", params=_range_query(selector, w)) as resp:
        if resp.status_code in REFUSED_STATUSES:
            raise SourceRefused(f"sources.prometheus_server ({url}): HTTP {resp.status_code}: the server refused "
                                "planewatch's credentials (sources.prometheus_server.auth)")
        body = bytearray()
        for chunk in resp.iter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise _Failed(f"answer of {selector} larger than {MAX_ANSWER_BYTES} bytes: narrow the selector or "
                              "max_window")
        status = resp.status_code
    text = body.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError:
        raise _Failed(f"HTTP {status}: not a Prometheus API answer: {text[:200]!r}") from None
    if not isinstance(doc, dict):
        raise _Failed(f"HTTP {status}: not a Prometheus API answer: {text[:200]!r}")
    if status != 200 or doc.get("status") != "success":
        raise _Failed(f"HTTP {status}: {doc.get('errorType', 'error')}: {doc.get('error', text[:200])}")
    data = doc.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(result, list):
        got = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise _Failed(f"{selector}: expected a matrix (a range selector), got {got}")
    if not all(isinstance(r, dict) and isinstance(r.get("metric"), dict) and isinstance(r.get("values"), list)
               for r in result):
        raise _Failed(f"{selector}: a series without its labels or values: {text[:200]!r}")
    warnings = doc.get("warnings")
    return result, [str(x) for x in warnings] if isinstance(warnings, list) else []


def query_samples(url: str, selector: str, w: Window, auth: ServerAuth,
                  timeout_s: float = QUERY_TIMEOUT_S) -> QueryAnswer:
    """Every sample of `selector` in window `w` from the Prometheus at `url` (its /api/v1/query): a server that
    fails, times out or answers something else is an answer with `error`.

    Raises:
        SourceRefused: the server refused the credentials (401, 403) or its certificate is not trusted: no retry
            mends it, the run stops (a SecretError: a secret the settings name cannot be read).
    """
    out = QueryAnswer()
    headers = auth.headers()
    verify: Any = auth.ca_file or True
    try:
        with httpx.Client(base_url=url.rstrip("/"), timeout=timeout_s, headers=headers, auth=auth.basic(),
                          verify=verify) as client:
            out.series, out.warnings = _answer(client, url, selector, w)
    except _Failed as e:
        out.error = str(e)
    except httpx.TimeoutException:
        out.error = f"timed out after {timeout_s:g} s"
    except httpx.ConnectError as e:
        if "CERTIFICATE_VERIFY_FAILED" in str(e):
            raise SourceRefused(f"sources.prometheus_server ({url}): TLS handshake failed: {e} "
                                "(sources.prometheus_server.auth.ca_file)") from None
        out.error = f"cannot connect: {e}"
    except httpx.HTTPError as e:
        out.error = f"{type(e).__name__}: {e}"
    if out.error:
        out.series = []
    return out


# ----------------------------------------------------------------------------------------------------------- text

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})


@dataclass
class TargetSamples:
    """One target's samples of a read, as Prometheus text (`text`; '' when it has none new), its newest sample time
    (`last_ms`), and its cluster and broker (None: unmapped)."""

    key: str
    labels: dict[str, str]
    cluster: str | None
    broker_id: int | None
    last_ms: int
    lines: list[tuple[str, int, str]] = field(default_factory=list)  # (series text, ts ms, value)

    @property
    def samples(self) -> int:
        return len(self.lines)

    @property
    def text(self) -> str:
        return "".join(f"{series} {value} {ts}\n" for series, ts, value in sorted(self.lines))


def target_key(url: str, labels: Mapping[str, str], named_by: Iterable[str] = ()) -> str:
    """A target's name in the offsets and the records' `source`: the server, its `job` and `instance`, and the
    labels in `named_by` it has (those the mapping rules read: two scrape configs of one address under different
    cluster labels are two targets)."""
    extra = "".join(f",{k}={labels[k]}" for k in sorted(set(named_by) - set(TARGET_LABELS)) if k in labels)
    return f"{url.rstrip('/')}#job={labels.get('job', '')},instance={labels.get('instance', '')}{extra}"


def _series_text(metric: Mapping[str, str], dropped: frozenset[str]) -> str:
    labels = ",".join(f'{k}="{str(v).translate(_ESCAPES)}"' for k, v in sorted(metric.items())
                      if k != "__name__" and k not in dropped)
    return f"{metric.get('__name__', '')}{{{labels}}}" if labels else str(metric.get("__name__", ""))


def target_samples(url: str, series: Iterable[Mapping[str, Any]], positions: Mapping[str, int], since_ms: int,
                   rules: Sequence[LabelRule], cluster: str | None) -> dict[str, TargetSamples]:
    """The samples of a read per target, each after that target's position (`positions`; a target without one:
    after `since_ms`), mapped to cluster and broker by `rules`. A target whose only series is START_SERIES is a
    process that is not a broker (Prometheus itself, an exporter of another service): left out.

    Raises:
        ValueError: a sample that is not [seconds, "value"].
    """
    dropped = frozenset(TARGET_LABELS) | {r.label for r in rules}
    out: dict[str, TargetSamples] = {}
    brokers: set[str] = set()  # targets with a series besides START_SERIES
    for s in series:
        metric: Mapping[str, str] = s.get("metric") or {}
        key = target_key(url, metric, dropped)
        t = out.get(key)
        if t is None:
            target_labels = {k: str(v) for k, v in metric.items() if k in dropped}
            c, b = map_target(metric, rules, cluster)
            t = out[key] = TargetSamples(key, target_labels, c, b, positions.get(key, since_ms))
        after = positions.get(key, since_ms)
        text = _series_text(metric, dropped)
        for ts_s, value in s.get("values") or []:
            ts = round(float(ts_s) * 1000)
            if ts > after:
                t.lines.append((text, ts, str(value)))
                t.last_ms = max(t.last_ms, ts)
        if metric.get("__name__") != START_SERIES:
            brokers.add(key)
    return {k: t for k, t in out.items() if k in brokers}
