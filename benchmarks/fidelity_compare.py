"""The fidelity report's pure core: outcomes of wire probes, log-line templates, metric names, and their comparison.

No sockets, processes or files here: :mod:`benchmarks.fidelity` runs the clusters and hands this module what it
saw (decoded response bodies, log lines, Prometheus text); the test checks its invariants on the same values.

Kinds of comparison, each a list of rows with a ``status``:

* ``apis``: ApiVersions ranges per API key both implement (``same`` or ``differs``), APIs only Kafka has;
* ``cases``: one :class:`Outcome` per probe and side (connection closed or not, every error code with its path, the
  set of field paths in the answer) -> ``same`` / ``differs``;
* ``templates``: line templates (numbers, ids, timestamps, topic names, hosts normalised to placeholders) of
  state-change.log, controller.log and kafka-request.log -> ``shared`` / ``only-reference`` / ``only-kafka``;
* ``metrics``: metric names of the Prometheus endpoints -> ``shared`` / ``only-reference`` / ``only-kafka``.

A row that differs is classified by :data:`DIFFERS_ON_PURPOSE` (the first entry whose kind and pattern match gives the
reason), or by the baseline Kafka (2.8, the version the reference imitates) for templates and metric names; what stays
unexplained is ``fix``: the reference broker is wrong there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fidelity_known import DIFFERS_ON_PURPOSE, KAFKA_28_KNOWN_TEMPLATES, Intended, classify

__all__ = [
    "DIFFERS_ON_PURPOSE",
    "KAFKA_28_KNOWN_TEMPLATES",
    "Intended",
    "Outcome",
    "classify",
    "compare_apis",
    "compare_cases",
    "compare_metrics",
    "compare_templates",
    "line_template",
    "metric_names",
    "outcome",
    "render_text",
    "summary",
    "templates_of",
]


def _verdict(row: dict[str, Any], reason: Intended | None, as_baseline: bool, baseline_reason: str) -> None:
    """Mark a differing row: on purpose (a listed reason, or the reference agrees with the baseline), else fix."""
    if reason is not None:
        row.update(verdict="on purpose", category=reason.category, reason=reason.reason)
    elif as_baseline:
        row.update(verdict="on purpose", category="version", reason=baseline_reason)
    else:
        row["verdict"] = "fix"


# ------------------------------------------------------------------------------------------------------ outcomes
@dataclass(frozen=True, slots=True)
class Outcome:
    """What one probe got back: closed, or the error codes (path=code, in order) and the field paths of the answer."""

    closed: bool
    errors: tuple[str, ...] = ()
    shape: tuple[str, ...] = ()
    trailing: int = 0
    facts: tuple[tuple[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        if self.closed:
            return {"closed": True}
        out: dict[str, Any] = {"errors": list(self.errors), "shape": list(self.shape)}
        if self.trailing:
            out["trailing_bytes"] = self.trailing
        if self.facts:
            out["facts"] = dict(self.facts)
        return out

    def describe(self) -> str:
        if self.closed:
            return "connection closed"
        errs = ", ".join(self.errors) or "no error fields"
        return errs + (f"; {self.trailing} trailing bytes" if self.trailing else "")


def _walk(value: Any, path: str, errors: list[str], shape: set[str]) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            if key == "_tagged":
                shape.update(f"{path}_tagged.{tag}" for tag in sub)
                continue
            sub_path = f"{path}{key}"
            shape.add(f"{sub_path}=null" if sub is None else sub_path)  # null and empty are different answers
            if key.endswith("ErrorCode") and isinstance(sub, int):
                errors.append(f"{sub_path}={sub}")
            _walk(sub, sub_path + ".", errors, shape)
    elif isinstance(value, list):
        for item in value:
            _walk(item, path.rstrip(".") + "[].", errors, shape)


def outcome(body: Mapping[str, Any] | None, trailing: int = 0, facts: Mapping[str, Any] | None = None) -> Outcome:
    """The :class:`Outcome` of a decoded answer (``None``: the broker closed the connection)."""
    if body is None:
        return Outcome(closed=True)
    errors: list[str] = []
    shape: set[str] = set()
    _walk(dict(body), "", errors, shape)
    # the same error at the same path for several partitions is one fact about the answer
    return Outcome(False, tuple(dict.fromkeys(errors)), tuple(sorted(shape)), trailing,
                   tuple(sorted((facts or {}).items())))


def compare_cases(kafka: Mapping[str, Outcome], reference: Mapping[str, Outcome],
                  baseline: Mapping[str, Outcome] | None = None,
                  intended: Sequence[Intended] = DIFFERS_ON_PURPOSE) -> list[dict[str, Any]]:
    """One row per probe both sides answered: same / differs, a difference classified by
    :data:`DIFFERS_ON_PURPOSE`, else by the baseline Kafka (the reference answers as 2.8 does), else ``fix``."""
    rows = []
    for name in kafka:
        if name not in reference:
            continue
        k, r = kafka[name], reference[name]
        row: dict[str, Any] = {"case": name, "kafka": k.as_json(), "reference": r.as_json()}
        if baseline is not None and name in baseline:
            row["baseline"] = baseline[name].as_json()
        if k == r:
            row["status"] = "same"
        else:
            row["status"] = "differs"
            row["detail"] = _case_detail(k, r)
            _verdict(row, classify("case", name, intended),
                     baseline is not None and baseline.get(name) == r, "Kafka 2.8 answers the same")
        rows.append(row)
    return rows


def _case_detail(k: Outcome, r: Outcome) -> str:
    if k.closed != r.closed:
        return f"kafka: {k.describe()}; reference: {r.describe()}"
    parts = []
    if k.errors != r.errors:
        parts.append(f"errors kafka [{', '.join(k.errors)}] reference [{', '.join(r.errors)}]")
    only_k = sorted(set(k.shape) - set(r.shape))
    only_r = sorted(set(r.shape) - set(k.shape))
    if only_k:
        parts.append(f"fields only from kafka: {', '.join(only_k)}")
    if only_r:
        parts.append(f"fields only from the reference: {', '.join(only_r)}")
    if k.trailing != r.trailing:
        parts.append(f"trailing bytes kafka {k.trailing} reference {r.trailing}")
    if k.facts != r.facts:
        parts.append(f"facts kafka {dict(k.facts)} reference {dict(r.facts)}")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------------------------ ApiVersions
def compare_apis(kafka: Mapping[int, tuple[int, int]], reference: Mapping[int, tuple[int, int]],
                 names: Mapping[int, str], baseline: Mapping[int, tuple[int, int]] | None = None,
                 intended: Sequence[Intended] = DIFFERS_ON_PURPOSE) -> list[dict[str, Any]]:
    """One row per API key advertised by either side: ``same``, ``differs`` (classified like
    :func:`compare_cases`), ``only-kafka``, ``only-reference``."""
    rows = []
    for key in sorted(set(kafka) | set(reference)):
        name = names.get(key, str(key))
        row: dict[str, Any] = {"api_key": key, "api": name,
                               "kafka": list(kafka[key]) if key in kafka else None,
                               "reference": list(reference[key]) if key in reference else None}
        if baseline is not None:
            row["baseline"] = list(baseline[key]) if key in baseline else None
        if key not in reference:
            row["status"] = "only-kafka"
        elif key not in kafka:
            row["status"] = "only-reference"
            row["verdict"] = "fix"
        elif kafka[key] == reference[key]:
            row["status"] = "same"
        else:
            row["status"] = "differs"
            _verdict(row, classify("api", name, intended),
                     baseline is not None and tuple(baseline.get(key, ())) == tuple(reference[key]),
                     "Kafka 2.8 advertises the same range")
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------------ templates
_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) "
                   r"\(([^()]*)\)$")
_UUID_CANONICAL = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Kafka's base64 topic/cluster ids: 22 characters of the URL-safe alphabet with a digit, '_' or '-' somewhere (a
# 22-letter word such as UpdateMetadataResponse is not an id), or the zero id AAAAAAAAAAAAAAAAAAAAAA.
_UUID_BASE64 = re.compile(r"(?<![\w-])(?=[A-Za-z0-9_-]*[0-9_-]|A{22})[A-Za-z0-9_-]{22}(?![\w-])")
# A 22-character value of a field named ...Id/...id is an id whatever characters it drew: about 1 in 100 random ids
# has no digit, '_' or '-' (52/64 to the 22nd power), which the pattern above cannot tell from a word.
_UUID_FIELD = re.compile(r"(?<=[Ii]d=)[A-Za-z0-9_-]{22}(?![\w-])|(?<=[Ii]d: )[A-Za-z0-9_-]{22}(?![\w-])")
_HOST = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b|\blocalhost\b")
_NUMBER = re.compile(r"(?<![A-Za-z_<])\d+(?:\.\d+)?")
_NEGATIVE = re.compile(r"(?<=[\s=(\[,:{])-<n>")
_NUMBER_RUN = re.compile(r"<n>(?:,<n>)+")
_GROUP = re.compile(r"(\w*)([(\[{])([^()\[\]{}]*)([)\]}])")
_TOKEN = re.compile(r"\x00(\d+)\x00")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
#: JSON keys of the request log whose values are identity, not data: kept literally in the template.
REQUEST_LOG_LITERALS = frozenset({"requestApiKey", "requestApiKeyName", "requestApiVersion", "isForwarded",
                                  "securityProtocol", "principal", "listener", "requestApiVersionDeprecated"})


def _dedupe_items(content: str) -> str:
    """``a, a, b, b`` -> ``a, b``: list items that normalised to the same text are one item."""
    sep = ", " if ", " in content else ","
    items = content.split(sep)
    out: list[str] = []
    for item in items:
        if not out or out[-1] != item:
            out.append(item)
    return sep.join(out)


def _collapse(text: str) -> str:
    """Merge repeated items of every (nested) list or struct group, innermost first."""
    table: list[str] = []
    index: dict[str, int] = {}

    def intern(m: re.Match[str]) -> str:
        name, opener, content, closer = m.groups()
        if _CLOSERS[opener] != closer:
            return m.group(0).replace(opener, "\x01").replace(closer, "\x02")
        text = f"{name}{opener}{_dedupe_items(content)}{closer}"
        if text not in index:  # equal groups get equal tokens, so their enclosing list can merge them
            index[text] = len(table)
            table.append(text)
        return f"\x00{index[text]}\x00"

    previous = None
    while previous != text:
        previous = text
        text = _GROUP.sub(intern, text)
    while _TOKEN.search(text):
        text = _TOKEN.sub(lambda m: table[int(m.group(1))], text)
    return text.replace("\x01", "(").replace("\x02", ")")


def _normalise_text(message: str, topics: Sequence[str]) -> str:
    for topic in sorted(topics, key=len, reverse=True):
        message = re.sub(r"(?<![\w.-])" + re.escape(topic) + r"(?![\w.])", "<topic>", message)
    message = re.sub(r"<topic>-\d+\b", "<tp>", message)
    message = _UUID_CANONICAL.sub("<uuid>", message)
    message = _UUID_BASE64.sub("<uuid>", message)
    message = _UUID_FIELD.sub("<uuid>", message)
    message = _HOST.sub("<host>", message)
    message = _NUMBER.sub("<n>", message)
    message = _NEGATIVE.sub("<n>", message)
    message = _NUMBER_RUN.sub("<n>", message)  # "ISR:1,2", "replicas 1,2": one placeholder however many
    message = re.sub(r"'[^']*'", "'<s>'", message)
    return re.sub(r"\s+", " ", _collapse(message)).strip()


_ALTERNATIVES = "|"  # a merged scalar seen with several placeholders: "<n>|<s>"
#: The skeleton of a list of scalars, or of an empty list (its element type is unknown).
LIST = "<list>"


def _skeleton(value: Any, key: str | None = None) -> Any:
    """A JSON value with its data replaced by placeholders (``<s>``, ``<n>``, ``<b>``; null kept; a list of scalars
    or an empty list ``<list>``; a list of objects one merged element), the values of :data:`REQUEST_LOG_LITERALS`
    kept."""
    if key in REQUEST_LOG_LITERALS:
        return value
    if isinstance(value, dict):
        return {k: _skeleton(v, k) for k, v in value.items()}
    if isinstance(value, list):
        objects = [_skeleton(item) for item in value if isinstance(item, dict)]
        if not objects:
            return LIST
        merged = objects[0]
        for item in objects[1:]:
            merged = _merge(merged, item)
        return [merged]
    if isinstance(value, bool):
        return "<b>"
    if isinstance(value, (int, float)):
        return "<n>"
    if isinstance(value, str):
        return "<s>"
    return value


def _merge(a: Any, b: Any) -> Any:
    """The union of two skeletons: keys of both (``a``'s order first), list elements merged, null absorbed by a
    value seen elsewhere, ``<list>`` by a list of objects, other differing scalars as sorted alternatives."""
    if a is None or (a == LIST and isinstance(b, list)):
        return b
    if b is None or (b == LIST and isinstance(a, list)):
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        out = {k: _merge(v, b[k]) if k in b else v for k, v in a.items()}
        out.update({k: v for k, v in b.items() if k not in a})
        return out
    if isinstance(a, list) and isinstance(b, list):
        return [_merge(a[0], b[0])]
    if a == b:
        return a
    alternatives = set()
    for v in (a, b):
        alternatives.update((v if isinstance(v, str) else json.dumps(v)).split(_ALTERNATIVES))
    return _ALTERNATIVES.join(sorted(alternatives))


def _request_line(message: str) -> tuple[tuple[Any, ...], Any] | None:
    """(identity, skeleton) of a KIP-673 ``Completed request:{json}`` message.

    The identity is the API name, version, listener and sender (a controller or a client): one template per
    identity, the union of its lines' skeletons, so that a list empty in one line and full in the next, or a value
    null once, does not split a template by timing.
    """
    prefix = "Completed request:"
    if not message.startswith(prefix):
        return None
    try:
        data = json.loads(message[len(prefix):])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    header = data.get("requestHeader") or {}
    client = str(header.get("clientId", ""))
    sender = "controller" if client.isdigit() else "client"  # a controller's client id is its broker id
    identity = (header.get("requestApiKeyName"), header.get("requestApiVersion"), data.get("listener"), sender)
    return identity, _skeleton(data)


def line_template(line: str, topics: Sequence[str] = ()) -> str | None:
    """The template of one log4j line ``[%d] %p %m (%c)``: level, message with placeholders, logger; None for a
    continuation line (a stack trace) or text that is not a log4j line.

    A request-log line (``Completed request:{json}``) becomes its JSON skeleton (:func:`templates_of` merges the
    skeletons of the lines of one API version and listener).
    """
    m = _LINE.match(line.rstrip("\n"))
    if m is None:
        return None
    _, level, message, logger = m.groups()
    request = _request_line(message)
    if request is not None:
        return _request_template(level, request[1], logger)
    return f"{level} {_normalise_text(message, topics)} ({logger})"


def _request_template(level: str, skeleton: Any, logger: str) -> str:
    return f"{level} Completed request:{json.dumps(skeleton, separators=(',', ':'))} ({logger})"


def templates_of(lines: Iterable[str], topics: Sequence[str] = ()) -> set[str]:
    """The set of templates of a log file's lines; request-log lines give one template per API version and
    listener, the union of their skeletons."""
    out: set[str] = set()
    requests: dict[tuple[Any, ...], tuple[str, Any, str]] = {}
    for line in lines:
        m = _LINE.match(line.rstrip("\n"))
        if m is None:
            continue
        _, level, message, logger = m.groups()
        request = _request_line(message)
        if request is None:
            out.add(f"{level} {_normalise_text(message, topics)} ({logger})")
            continue
        identity, skeleton = request
        key = (level, logger, *identity)
        seen = requests.get(key)
        requests[key] = (level, skeleton if seen is None else _merge(seen[1], skeleton), logger)
    out.update(_request_template(level, skeleton, logger) for level, skeleton, logger in requests.values())
    return out


_DIFF_TOKEN = re.compile(r'<\w+>|"[^"]*"|\w+|[^\w\s]')


def nearest(template: str, others: Iterable[str]) -> tuple[str | None, str]:
    """The template of ``others`` most like ``template`` (same level and logger) and what differs, as
    ``-removed +added`` tokens; (None, "") when none is alike enough to be its counterpart."""
    import difflib

    head, _, tail = template.partition(" ")
    logger = template.rsplit(" ", 1)[-1]
    tokens = _DIFF_TOKEN.findall(tail)
    best: tuple[float, str | None, list[str]] = (0.0, None, [])
    api = _API_NAME.search(template)
    for other in others:
        if not other.startswith(head + " ") or not other.endswith(logger):
            continue
        if api is not None and f'"requestApiKeyName":"{api.group(1)}"' not in other:
            continue  # a request-log line's counterpart is a line of the same API
        theirs = _DIFF_TOKEN.findall(other.partition(" ")[2])
        matcher = difflib.SequenceMatcher(None, tokens, theirs, autojunk=False)
        if matcher.quick_ratio() <= best[0]:
            continue
        ratio = matcher.ratio()
        if ratio > best[0]:
            best = (ratio, other, theirs)
    ratio, found, theirs = best
    if found is None or ratio < NEAREST_MIN_RATIO:
        return None, ""
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, tokens, theirs, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            parts.append("-" + "".join(tokens[i1:i2]))
        if op in ("replace", "insert"):
            parts.append("+" + "".join(theirs[j1:j2]))
    return found, " ".join(parts)


_API_NAME = re.compile(r'"requestApiKeyName":"(\w+)"')
#: How alike two templates must be (difflib ratio over tokens) to be shown as one line written two ways.
NEAREST_MIN_RATIO = 0.6


def compare_templates(kind: str, reference: set[str], kafka: set[str], baseline: set[str] | None = None,
                      intended: Sequence[Intended] = DIFFERS_ON_PURPOSE) -> list[dict[str, Any]]:
    """Rows for one log kind (``state-change.log``, ...): shared, only-reference, only-kafka.

    A template only one side writes is on purpose when :data:`DIFFERS_ON_PURPOSE` explains it (key
    ``"<kind> <status>: <template>"``), or when the baseline Kafka (2.8) agrees with the reference: a
    reference-only template that 2.8 writes (or :data:`KAFKA_28_KNOWN_TEMPLATES` holds), a Kafka-only template 2.8
    does not write (3.x text). Anything else is ``fix``. Each one-sided row also names how the other side writes
    the nearest line (:func:`nearest`).
    """
    rows = []
    for template in sorted(reference | kafka):
        row: dict[str, Any] = {"log": kind, "template": template}
        if template in reference and template in kafka:
            row["status"] = "shared"
            rows.append(row)
            continue
        only_ref = template in reference
        row["status"] = "only-reference" if only_ref else "only-kafka"
        counterpart, diff = nearest(template, (kafka - reference) if only_ref else (reference - kafka))
        if counterpart is not None:
            row["nearest"] = diff  # how the other side writes this line: -this side's tokens +the other side's
        reason = classify("template", f"{kind} {row['status']}: {template}", intended)
        if reason is not None:
            row.update(verdict="on purpose", category=reason.category, reason=reason.reason)
        elif baseline is not None and only_ref and template in baseline:
            row.update(verdict="on purpose", category="version",
                       reason="Kafka 2.8 writes this line (the reference imitates 2.8 ZK mode)")
        elif only_ref and template in KAFKA_28_KNOWN_TEMPLATES:
            row.update(verdict="on purpose", category="version",
                       reason="Kafka 2.8 writes this line in a larger cluster (KAFKA_28_KNOWN_TEMPLATES)")
        elif baseline is not None and not only_ref and template not in baseline:
            row.update(verdict="on purpose", category="version", reason="3.x only: Kafka 2.8 does not write it")
        else:
            row["verdict"] = "fix"
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------------ metrics
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="')


def metric_names(text: str, exporter_counter_suffix: bool = False) -> dict[str, frozenset[str]]:
    """metric name -> label keys of a Prometheus text exposition.

    ``exporter_counter_suffix``: the text comes from jmx_exporter 1.x, which appends ``_total`` to every COUNTER
    (``..._count`` -> ``..._count_total``); the suffix is removed so names compare with the 0.x names of the
    ``kafka-2_0_0`` rules the reference renders.
    """
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        name = m.group(1)
        if exporter_counter_suffix and name.endswith("_count_total"):
            name = name.removesuffix("_total")
        out.setdefault(name, set()).update(_LABEL.findall(m.group(2) or ""))
    return {k: frozenset(v) for k, v in out.items()}


def compare_metrics(reference: Mapping[str, frozenset[str]], kafka: Mapping[str, frozenset[str]],
                    kafka_all: Mapping[str, frozenset[str]] | None = None,
                    baseline: Mapping[str, frozenset[str]] | None = None,
                    intended: Sequence[Intended] = DIFFERS_ON_PURPOSE) -> list[dict[str, Any]]:
    """Rows per metric name: shared (label keys compared), only-reference, only-kafka.

    ``kafka_all``: Kafka's names with every MBean exported (not only the agent's include list); a reference-only
    name found there is a Kafka metric the agent configuration leaves out, not a name Kafka lacks. ``baseline``: the
    baseline Kafka's names (a Kafka-only name 2.8 lacks too is 3.x only).
    """
    rows = []
    for name in sorted(set(reference) | set(kafka)):
        row: dict[str, Any] = {"metric": name}
        if name in reference and name in kafka:
            row["status"] = "shared"
            if reference[name] != kafka[name]:
                row["labels"] = {"kafka": sorted(kafka[name]), "reference": sorted(reference[name])}
                row["verdict"] = "fix"
            rows.append(row)
            continue
        only_ref = name in reference
        row["status"] = "only-reference" if only_ref else "only-kafka"
        reason = classify("metric", name, intended)
        if reason is not None:
            row.update(verdict="on purpose", category=reason.category, reason=reason.reason)
        elif only_ref and kafka_all is not None and name in kafka_all:
            row.update(verdict="on purpose", category="design",
                       reason="Kafka has it; the JMX exporter's include list (planewatch/kafka/configs.py) leaves it "
                              "out")
        elif not only_ref and baseline is not None and name not in baseline:
            row.update(verdict="on purpose", category="version", reason="3.x only: Kafka 2.8 does not expose it")
        elif only_ref and baseline is not None and name in baseline:
            row.update(verdict="on purpose", category="version", reason="Kafka 2.8 exposes it")
        else:
            row["verdict"] = "fix"
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------------ report
@dataclass
class Section:
    """Counts of one comparison."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def count(self, **match: str) -> int:
        return sum(1 for r in self.rows if all(r.get(k) == v for k, v in match.items()))


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """The headline counts of a report (the numbers printed first)."""
    apis = Section(report["apis"])
    cases = Section(report["cases"])
    templates = Section(report["templates"])
    metrics = Section(report["metrics"])
    return {
        "apis": {"compared": apis.count(status="same") + apis.count(status="differs"),
                 "same": apis.count(status="same"), "differing": apis.count(status="differs"),
                 "differing_fix": apis.count(status="differs", verdict="fix"),
                 "only_kafka": apis.count(status="only-kafka"), "only_reference": apis.count(status="only-reference")},
        "cases": {"compared": len(cases.rows), "same": cases.count(status="same"),
                  "different": cases.count(status="differs"), "different_fix": cases.count(verdict="fix")},
        "templates": {log: {"shared": Section([r for r in templates.rows if r["log"] == log]).count(status="shared"),
                            "only_reference": sum(1 for r in templates.rows
                                                  if r["log"] == log and r["status"] == "only-reference"),
                            "only_kafka": sum(1 for r in templates.rows
                                              if r["log"] == log and r["status"] == "only-kafka"),
                            "fix": sum(1 for r in templates.rows if r["log"] == log and r.get("verdict") == "fix")}
                      for log in dict.fromkeys(r["log"] for r in templates.rows)},
        "metrics": {"shared": metrics.count(status="shared"), "only_reference": metrics.count(status="only-reference"),
                    "only_kafka": metrics.count(status="only-kafka"), "fix": metrics.count(verdict="fix")},
    }


_REQUEST_ID = re.compile(r'"requestApiKeyName":"(\w+)".*"requestApiVersion":(\d+)|'
                         r'"requestApiVersion":(\d+).*"requestApiKeyName":"(\w+)"')
_LISTENER = re.compile(r'"listener":"(\w+)"')


def _short(template: str) -> str:
    """A request-log template by its API, version and listener (the skeleton is long); other templates as they are."""
    if "Completed request:{" not in template:
        return template
    m = _REQUEST_ID.search(template)
    listener = _LISTENER.findall(template)
    if m is None:
        return template
    api, version = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    return f"Completed request: {api} v{version}" + (f" on {listener[-1]}" if listener else "")


def render_text(report: Mapping[str, Any], width: int = 110) -> str:
    """The plain-text report: the counts, then every difference with its verdict, then the on-purpose table."""
    s = summary(report)
    out = [f"fidelity: reference broker vs Apache Kafka {report['kafka_version']}"
           + (f" (baseline {report['baseline_version']})" if report.get("baseline_version") else "")
           + f", {report['brokers']} broker(s) each", ""]
    a = s["apis"]
    out.append(f"APIs compared {a['compared']}: same {a['same']}, differing {a['differing']} "
               f"(fix {a['differing_fix']}); only in Kafka {a['only_kafka']}, only in the reference "
               f"{a['only_reference']}")
    c = s["cases"]
    out.append(f"wire cases {c['compared']}: same {c['same']}, different {c['different']} (fix {c['different_fix']})")
    for log, t in s["templates"].items():
        out.append(f"{log} templates: shared {t['shared']}, only in the reference {t['only_reference']}, only in "
                   f"Kafka {t['only_kafka']} (fix {t['fix']})")
    m = s["metrics"]
    out.append(f"metric names: shared {m['shared']}, only in the reference {m['only_reference']}, only in Kafka "
               f"{m['only_kafka']} (fix {m['fix']})")
    out += ["", "APIs with different version ranges (kafka / reference):"]
    for r in report["apis"]:
        if r["status"] == "differs":
            out.append(f"  {r['api']:<24} {r['kafka']} / {r['reference']}  {r['verdict']}")
    only_k = [r["api"] for r in report["apis"] if r["status"] == "only-kafka"]
    out.append(f"APIs only Kafka has ({len(only_k)}): {', '.join(only_k)}")
    out += ["", "wire cases:"]
    for r in report["cases"]:
        mark = "same" if r["status"] == "same" else r["verdict"]
        out.append(f"  [{mark:>10}] {r['case']}")
        if r["status"] != "same":
            out.append(f"               {r['detail']}"[:width * 3])
    for title, rows in (("templates", report["templates"]), ("metric names", report["metrics"])):
        out += ["", f"{title} that differ (fix first):"]
        differing = [r for r in rows if r["status"] != "shared" or r.get("verdict")]
        differing.sort(key=lambda r: (r.get("verdict") != "fix", r.get("log", ""), r["status"]))
        for r in differing:
            key = _short(r["template"]) if "template" in r else r["metric"]
            where = f"{r['log']}: " if "log" in r else ""
            out.append(f"  [{r.get('verdict', ''):>10}] {r['status']:<14} {where}{key}"[:width * 2])
            if r.get("reason"):
                out.append(f"               why: {r['reason']}"[:width * 2])
            if "labels" in r:
                out.append(f"               label keys kafka {r['labels']['kafka']} reference "
                           f"{r['labels']['reference']}"[:width * 2])
            if r.get("nearest"):
                out.append(f"               the other side writes it with: {r['nearest']}"[:width * 2])
    out += ["", "differs on purpose (DIFFERS_ON_PURPOSE):"]
    for entry in report["intended"]:
        out.append(f"  {entry['kind']:<8} {entry['category']:<7} /{entry['pattern']}/ {entry['reason']}"[:width * 3])
    out.append("")
    return "\n".join(out)
