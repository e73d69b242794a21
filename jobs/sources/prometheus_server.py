"""`planewatch_prometheus_server`: a PySpark Python streaming data source reading the brokers' series from the
operator's own Prometheus (its query API), exactly once into the raw-record columns of `RAW_RECORD_DDL`, so no
broker is scraped a second time and the hour before planewatch started (or the minutes it was down) is read too.

    spark.readStream.format("planewatch_prometheus_server")
         .option("url", "http://prometheus:9090").option("match", '{job="kafka"}')
         .option("mapping", rules_json(label_rules(["strimzi"]))).load()

Theory of operation (the read itself: jobs.sources.prometheus_query):

* **Offsets** are `{"until": ms, "targets": {key: {cluster, broker_id, ts, from, offset}}}`: per target (the
  server's URL with the target's `job`, `instance` and the labels the mapping reads), `ts` its newest sample read,
  and [`from`, `offset`) the bytes of this batch's text in the target's stream, exactly as `planewatch_prometheus`
  logs a scrape. A batch of this source is thus a batch of scrapes to every reader downstream (the driver path's
  spool read, the batch's size, the byte positions of its records). `until` is the horizon the reads reached
  (jobs.sources.prometheus_query). The server itself is a target too (key: its URL): a failed or partial read is
  one `source-error` record of its stream.
* **latestOffset** (driver, once per trigger) reads the window (jobs.sources.prometheus_query.window: from a little
  before the horizon to now, at most `maxWindowS` wide) and keeps each target's samples after its position as one
  answer in the `ScrapeStore` (memory and the spool) before returning the offsets naming them. A first start reads
  from `catchUpS` ago; after downtime the horizon is where the last run stopped, so the gap is read once, window by
  window. A read that finds nothing new ends no batch (the same offsets); one that finds nothing in a window in the
  past (a gap in Prometheus' data) moves the horizon on.
* **Failures**: a read that fails (an HTTP error, a timeout, not Prometheus' API) is a `source-error` record on the
  server's stream with the reason; the horizon and positions stay, so the next read takes the same samples again
  and none is read twice, and each failure halves the next read's window (down to MIN_WINDOW_MS: an answer too
  large, Prometheus's query.max-samples) until a read succeeds. Under availableNow (`--once`) a failure is recorded
  once and the query ends. An answer with warnings (a partial answer: a store of a Thanos or a remote-read
  Prometheus unavailable) is taken with a `source-error` record saying so: what the missing part held before the
  samples read is not read again. A target no label rule maps is one `source-error` record per batch, its labels and
  head of samples in it (quarantined, counted); its samples are read past.
* **partitions/read/commit** are `planewatch_prometheus`' (jobs.sources.prometheus_source): the answers travel inside
  the input partitions, a replayed batch reads them from the spool.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from jobs import PipelineIOError
from jobs.sources.file_tail import OUTPUT_SCHEMA_DDL
from jobs.sources.prometheus_query import (
    DEFAULT_CATCH_UP_S,
    DEFAULT_MATCH,
    DEFAULT_MAX_WINDOW_S,
    MIN_WINDOW_MS,
    QUERY_TIMEOUT_S,
    LabelError,
    ServerAuth,
    label_rules,
    next_until,
    query_samples,
    target_samples,
    window,
)
from jobs.sources.prometheus_source import (
    TARGET_RETENTION_S,
    ScrapePartition,
    entry_scrapes,
    planned_scrapes,
    read_partition,
    scrape_partitions,
    stream_bytes,
)
from jobs.sources.scrape import ERROR_SAMPLE_BYTES, PROMETHEUS_FORMAT, Scrape, ScrapeStore
from schemas.routes import SOURCE_ERROR_FORMAT

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["PrometheusServerReader", "PrometheusServerSource"]

log = logging.getLogger(__name__)

def _float_option(options: dict[str, str], key: str, default: float) -> float:
    try:
        value = float(options.get(key) or default)
    except ValueError as exc:
        raise PipelineIOError(f"planewatch_prometheus_server option {key}: not a number") from exc
    if value <= 0:
        raise PipelineIOError(f"planewatch_prometheus_server option {key}: must be positive, got {value}")
    return value


def _json_option(options: dict[str, str], key: str, default: Any) -> Any:
    try:
        return json.loads(options[key]) if options.get(key) else default
    except ValueError as exc:
        raise PipelineIOError(f"planewatch_prometheus_server option {key}: not JSON: {exc}") from exc


class PrometheusServerReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of `planewatch_prometheus_server` (see the module docstring); `clock` returns epoch
    seconds."""

    def __init__(self, options: dict[str, str], clock: Callable[[], float] = time.time) -> None:
        self.url = (options.get("url") or "").rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise PipelineIOError(f"planewatch_prometheus_server option url: an http(s) URL, got {self.url!r}")
        self.match = (options.get("match") or DEFAULT_MATCH).strip()
        try:
            self.rules = label_rules(_json_option(options, "mapping", []))
        except LabelError as exc:
            raise PipelineIOError(f"planewatch_prometheus_server option mapping: {exc}") from exc
        auth = _json_option(options, "auth", {})
        known = {f.name for f in fields(ServerAuth)}
        if not isinstance(auth, dict) or set(auth) - known:
            raise PipelineIOError(f"planewatch_prometheus_server option auth: an object of {sorted(known)}")
        self.auth = ServerAuth(**auth)
        self.cluster = options.get("cluster") or None
        self.default_cluster = options.get("defaultcluster", "default")
        self.catch_up_ms = int(_float_option(options, "catchups", DEFAULT_CATCH_UP_S) * 1000)
        self.max_window_ms = max(MIN_WINDOW_MS, int(_float_option(options, "maxwindows", DEFAULT_MAX_WINDOW_S) * 1000))
        self._window_ms = self.max_window_ms  # the next read's width: halved after each failed read
        self.timeout_s = _float_option(options, "timeout", QUERY_TIMEOUT_S)
        self.store = ScrapeStore(options.get("spooldir") or None)
        self.clock = clock
        self.available_now = False
        self._cap_ms: int | None = None  # availableNow: read up to this time, then end
        self._reported: str | None = None  # the last problem of the server logged (logged on change)
        self._said_once: set[str] = set()  # availableNow: the kinds of problem already recorded

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def initialOffset(self) -> dict[str, Any]:
        return {"until": self._now_ms() - self.catch_up_ms, "targets": {}}

    def prepareForTriggerAvailableNow(self) -> None:
        # availableNow (--once): every sample up to now, window by window; the query ends once a read finds nothing
        self.available_now = True
        self._cap_ms = self._now_ms()

    def _report(self, problem: str | None) -> None:
        if problem != self._reported:
            if problem is None:
                log.warning("prometheus server %s: read again", self.url)
            else:
                log.warning("prometheus server %s: %s", self.url, problem)
        self._reported = problem

    def _entry(self, before: dict[str, Any], key: str, cluster: str, broker_id: int | None, got: Scrape
               ) -> dict[str, Any]:
        base = int(before[key]["offset"]) if key in before else 0
        self.store.put(key, got)
        return {"cluster": cluster, "broker_id": broker_id, "ts": got.ts_ms, "from": base,
                "offset": base + stream_bytes(got)}

    def _server_record(self, before: dict[str, Any], text: str, now_ms: int) -> dict[str, Any]:
        prev = before.get(self.url)
        ts = max(now_ms, int(prev["ts"]) + 1) if prev else now_ms
        entry = self._entry(before, self.url, self.cluster or self.default_cluster, None,
                            Scrape(ts, SOURCE_ERROR_FORMAT, text.encode("utf-8")))
        entry["server"] = True
        return entry

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        del limit  # a read is bounded by its window (maxWindowS)
        until = int(start["until"])
        before: dict[str, dict[str, Any]] = start["targets"]
        now = self._cap_ms if self.available_now and self._cap_ms is not None else self._now_ms()
        positions = {k: int(e["ts"]) for k, e in before.items() if not e.get("server")}
        w = window(until, now, self._window_ms)
        answer = query_samples(self.url, self.match, w, self.auth, self.timeout_s)
        self.store.clear(keep=set())  # every batch before this one has committed
        end = {k: e for k, e in before.items() if int(e["ts"]) >= w.end_ms - TARGET_RETENTION_S * 1000}
        if answer.error is not None:
            self._report(f"read failed: {answer.error}")
            self._window_ms = max(MIN_WINDOW_MS, self._window_ms // 2)
            if self._once("error"):
                return start  # --once: said once, the query ends
            end[self.url] = self._server_record(before, f"prometheus read failed: {answer.error}", self._now_ms())
            return {"until": until, "targets": end}
        self._report(None)
        self._window_ms = self.max_window_ms
        changed = False
        if answer.warnings and not self._once("warning"):
            end[self.url] = self._server_record(
                before, "prometheus read partial: " + "; ".join(answer.warnings)[:ERROR_SAMPLE_BYTES], self._now_ms())
            changed = True
        try:
            got_targets = target_samples(self.url, answer.series, positions, w.start_ms, self.rules, self.cluster)
        except (TypeError, ValueError) as e:  # a sample that is not [seconds, "value"]: the read failed
            if self._once("error"):
                return start
            end[self.url] = self._server_record(before, f"prometheus read failed: a malformed sample: {e}",
                                                self._now_ms())
            return {"until": until, "targets": end}
        for key, t in sorted(got_targets.items()):
            if not t.samples:
                continue
            changed = True
            if t.cluster is not None and t.broker_id is not None:
                got = Scrape(t.last_ms, PROMETHEUS_FORMAT, t.text.encode("utf-8"))
                end[key] = self._entry(before, key, t.cluster, t.broker_id, got)
                continue
            labels = ",".join(f"{k}={v}" for k, v in sorted(t.labels.items()))
            missing = " and no ".join(n for n, v in (("cluster", t.cluster), ("broker", t.broker_id)) if v is None)
            text = (f"prometheus target not mapped: labels {{{labels}}} give no {missing} "
                    "(sources.prometheus_server.mapping); "
                    f"{t.samples} samples not read\n{t.text[:ERROR_SAMPLE_BYTES]}")
            end[key] = self._entry(before, key, t.cluster or self.default_cluster, t.broker_id,
                                   Scrape(t.last_ms, SOURCE_ERROR_FORMAT, text.encode("utf-8")))
        newest = max((t.last_ms for t in got_targets.values() if t.samples), default=None)
        horizon = next_until(w, until, now, newest)
        if changed or horizon != until:
            # news, or an empty window in the past (a gap in Prometheus' data): the reads go on from its end
            return {"until": horizon, "targets": end}
        return start  # nothing new: the same offsets, so Spark runs no (empty) micro-batch

    def _once(self, kind: str) -> bool:
        """Under availableNow, whether a problem of `kind` was already recorded (else it is now); False otherwise."""
        if not self.available_now:
            return False
        if kind in self._said_once:
            return True
        self._said_once.add(kind)
        return False

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ScrapePartition]:
        return scrape_partitions(planned_scrapes(self.store, start, end))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition)

    def commit(self, end: dict[str, Any]) -> None:
        for key, e in end["targets"].items():
            for ts, _ in entry_scrapes(e):
                self.store.forget(key, ts)


class PrometheusServerSource(DataSource):
    """`planewatch_prometheus_server`: the brokers' series in the operator's Prometheus, one raw row per sample (or
    per failed read, or per unmapped target).

    Options: `url` (Prometheus' base URL), `match` (one series selector, default every `kafka_` series),
    `mapping` (JSON label rules: jobs.sources.prometheus_query.rules_json), `cluster` (for every target),
    `defaultCluster` (of the server's own records), `catchUpS` (a first start reads this far back, default 3600),
    `maxWindowS` (one read spans at most this, default 600), `timeout` (seconds per read, default 10), `auth` (JSON:
    jobs.sources.prometheus_query.ServerAuth's fields, files and variable names only), `spoolDir` (where answers wait
    for their batch to commit).
    """

    @classmethod
    def name(cls) -> str:
        return "planewatch_prometheus_server"

    def schema(self) -> str:
        return OUTPUT_SCHEMA_DDL

    def streamReader(self, schema: StructType) -> PrometheusServerReader:
        return PrometheusServerReader({str(k).lower(): str(v) for k, v in self.options.items()})
