"""Kafka's series read from the operator's Prometheus for `planewatch_prometheus_server`: the query window, the HTTP
query, and the samples turned into each target's Prometheus text (pure, but for `query_samples`' request).

Theory of operation:

* **Raw samples, not a graph**: an instant query of a range selector (`{__name__=~"kafka_.+"}[600000ms]` at time
  T) answers every sample Prometheus holds in the range, at the exporter's scrape times, unaligned and not
  interpolated (a `query_range` would step and fill). So a read is what a scrape of that target answered then.
* **A target's samples come in order**: Prometheus scrapes a target (`job`, `instance`) in one loop, each scrape's
  samples at one timestamp, appended at once (head isolation). A target's newest sample time read so far is thus
  its position: the next read takes its samples after it, whenever they became visible (a scrape slower than the
  read, a sample appended late), so each sample is read once. The window (`Window`) starts at the oldest position
  of the targets still scraped and ends now, at most `max_window_ms` later (a catch-up goes on over several batches).
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

__all__ = [
    "DEFAULT_CATCH_UP_S",
    "DEFAULT_MATCH",
    "DEFAULT_MAX_WINDOW_S",
    "LABEL_PRESETS",
    "QUERY_TIMEOUT_S",
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

# Kafka's series under every common rule set (the jmx_exporter's kafka-2_0_0, Strimzi's, Confluent's): their names
# start with `kafka_`. An operator narrows it with their own selectors (`{job="kafka"}`).
DEFAULT_MATCH = ('{__name__=~"kafka_.+"}',)
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
# A target whose newest sample is older than this behind the window's end is no longer scraped (a broker removed, a
# relabeled instance): it stops holding the window's start back. Prometheus marks a series stale after 5 minutes.
TARGET_STALE_MS = 10 * 60 * 1000
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


def window(positions: Iterable[int], until_ms: int, now_ms: int, max_window_ms: int) -> Window:
    """The next read's window: from the oldest position of the targets still scraped (`positions`: each target's
    newest sample read; those over TARGET_STALE_MS behind `until_ms`, the previous read's end, are left out) or the
    previous end, to now, at most `max_window_ms` wide."""
    live = [p for p in positions if p >= until_ms - TARGET_STALE_MS]
    start = min([*live, until_ms])
    return Window(start, max(start, min(now_ms, start + max_window_ms)))


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


def _range_query(selector: str, w: Window) -> dict[str, str]:
    return {"query": f"{selector}[{max(1, w.end_ms - w.start_ms)}ms]", "time": f"{w.end_ms / 1000:.3f}"}


def query_samples(url: str, selectors: Sequence[str], w: Window, auth: ServerAuth,
                  timeout_s: float = QUERY_TIMEOUT_S) -> QueryAnswer:
    """Every sample of `selectors` in window `w` from the Prometheus at `url` (its /api/v1/query): a server that
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
            for selector in selectors:
                resp = client.get("/api/v1/query", params=_range_query(selector, w))
                if resp.status_code in REFUSED_STATUSES:
                    raise SourceRefused(f"sources.prometheus_server ({url}): HTTP {resp.status_code}: the server "
                                        "refused planewatch's credentials (sources.prometheus_server.auth)")
                if len(resp.content) > MAX_ANSWER_BYTES:
                    out.error = (f"answer of {selector} larger than {MAX_ANSWER_BYTES} bytes: narrow the selector or "
                                 "max_window")
                    return out
                try:
                    doc = resp.json()
                except ValueError:
                    out.error = f"HTTP {resp.status_code}: not a Prometheus API answer: {resp.text[:200]!r}"
                    return out
                if resp.status_code != 200 or doc.get("status") != "success":
                    out.error = (f"HTTP {resp.status_code}: {doc.get('errorType', 'error')}: "
                                 f"{doc.get('error', resp.text[:200])}")
                    return out
                data = doc.get("data") or {}
                if data.get("resultType") != "matrix":
                    out.error = f"{selector}: expected a matrix (a range selector), got {data.get('resultType')}"
                    return out
                out.series += data.get("result") or []
                out.warnings += [str(x) for x in doc.get("warnings") or []]
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
    samples: int = 0

    @property
    def text(self) -> str:
        return "".join(f"{series} {value} {ts}\n" for series, ts, value in sorted(self.lines))


def target_key(url: str, labels: Mapping[str, str]) -> str:
    """A target's name in the offsets and the records' `source`: the server and its `job` and `instance`."""
    return f"{url.rstrip('/')}#job={labels.get('job', '')},instance={labels.get('instance', '')}"


def _series_text(metric: Mapping[str, str], dropped: frozenset[str]) -> str:
    labels = ",".join(f'{k}="{v.translate(_ESCAPES)}"' for k, v in sorted(metric.items())
                      if k != "__name__" and k not in dropped)
    return f"{metric.get('__name__', '')}{{{labels}}}" if labels else str(metric.get("__name__", ""))


def target_samples(url: str, series: Iterable[Mapping[str, Any]], positions: Mapping[str, int], since_ms: int,
                   rules: Sequence[LabelRule], cluster: str | None) -> dict[str, TargetSamples]:
    """The samples of a read per target, each after that target's position (`positions`; a target without one:
    after `since_ms`), mapped to cluster and broker by `rules`."""
    dropped = frozenset(TARGET_LABELS) | {r.label for r in rules}
    out: dict[str, TargetSamples] = {}
    for s in series:
        metric: Mapping[str, str] = s.get("metric") or {}
        key = target_key(url, metric)
        t = out.get(key)
        if t is None:
            target_labels = {k: v for k, v in metric.items() if k in dropped}
            c, b = map_target(metric, rules, cluster)
            t = out[key] = TargetSamples(key, target_labels, c, b, positions.get(key, since_ms))
        after = positions.get(key, since_ms)
        text = _series_text(metric, dropped)
        for ts_s, value in s.get("values") or []:
            ts = round(float(ts_s) * 1000)
            if ts <= after:
                continue
            t.lines.append((text, ts, str(value)))
            t.samples += 1
            t.last_ms = max(t.last_ms, ts)
    return out
