"""`planewatch_prometheus`: a PySpark Python streaming data source that scrapes Prometheus endpoints (JMX exporters
of Kafka brokers, the reference broker's `/metrics`) on every trigger, exactly once into the raw-record columns of
`RAW_RECORD_DDL`, so a live cluster needs no file landing step.

    spark.readStream.format("planewatch_prometheus")
         .option("targets", '[{"url": "http://127.0.0.1:9404/metrics", "cluster": "prod", "broker_id": 1}]')
         .option("clusterJson", '[{"path": "var/cluster"}]').option("interval", "10").load()

Theory of operation:

* **Offsets** are per target (key: the URL) `{cluster, broker_id, ts, from, offset}`: `ts` is the time (epoch ms) of
  the last planned scrape, and [`from`, `offset`) that scrape's bytes in the target's *scrape stream* - its answers
  one after another, as a landing step would append them to one file. A record's `source` is the URL,
  `source_offset` its byte position in that stream (a failed scrape's record counts its own text), and `ingest_ts`
  the scrape time, which is also the time of every sample without its own timestamp. The records of an answer are
  split exactly as the file source splits a `.prom` file (`file_tail.buffer_records`), so the parser sees the same
  raw records either way.
* **Scraping** (`scrape_due`) re-reads the targets (cluster.json files included) and starts a scrape of every
  target whose last scrape is at least `interval` old, each on its own with its own timeout (jobs.sources.scrape_pacing:
  a slow exporter gets a longer one, only an unanswering one is backed off); each answer goes to the `ScrapeStore`
  (memory and, with `spoolDir`, one file per scrape) and then to the queue of answers no batch has taken yet. With
  option `scrapeAhead` a thread of the reader does it on the interval's clock, whatever the batches do: a slow
  micro-batch (a loaded machine) then delays when the samples are processed, never when they are taken, so a
  condition that lasts less than a batch is still sampled while it lasts. Without it, `latestOffset` does it once
  per trigger.
* **latestOffset** (driver, once per trigger) takes every queued answer into the next batch's offsets, one entry per
  target; an entry holding several scrapes of its target lists them (`scrapes`: [ts, from] each). The answers are in
  the store *before* the new offsets are returned, then Spark logs the offsets and runs the batch. With availableNow
  (`--once`) every target is scraped once and the query then ends.
* **partitions/read**: the batch's answers travel inside its input partitions (pickled to the executors), so
  `read()` is a pure function of the offset range: every re-read of the batch (the driver path's collect, the
  executors' bronze write) yields the same rows.
* **Exactly once**: the offset log names the scrapes of every planned batch; the Delta sinks skip a batch id they
  already committed. A batch replayed after a crash reads its answers back from the spool, never scrapes again (a new
  scrape would be different data under the logged offsets). If the answer is gone (no spool, or the spool deleted)
  the batch holds one `source-error` record per lost scrape ("scrape lost: ..."), quarantined and counted: nothing is
  invented and nothing is silently dropped. `commit` drops the committed answers (Spark calls it when it plans the
  next batch, so a stopped query leaves its last batch's answers); planning the next batch clears whatever is left:
  every older batch is committed by then, and an answer no logged offset names (a crash between spooling and Spark
  logging the offsets) is never read. The spool thus holds about one batch of answers.
* Targets no longer listed keep their stream position for TARGET_RETENTION_S (a broker restart or a rewritten
  cluster.json continues its stream), then are forgotten.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from jobs import PipelineIOError
from jobs.sources.checkpoints import SCRAPE_SPOOL_DIR, logged_offset
from jobs.sources.file_tail import OUTPUT_SCHEMA_DDL, SPLIT_BYTES, buffer_records, pack, records_batch
from jobs.sources.scrape import (
    DEFAULT_TIMEOUT_S,
    MAX_BODY_BYTES,
    SCRAPE_THREADS,
    Scrape,
    ScrapeStore,
    Target,
    resolve_targets,
    scrape,
)
from jobs.sources.scrape_pacing import ScrapePacing
from schemas.routes import SOURCE_ERROR_FORMAT

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "DEFAULT_INTERVAL_S",
    "INTERVAL_SLACK",
    "TARGET_RETENTION_S",
    "PlannedScrape",
    "PrometheusStreamSource",
    "ScrapePartition",
    "entry_scrapes",
    "logged_scrape_records",
    "planned_scrapes",
    "read_partition",
    "scrape_batch_bytes",
    "scrape_partitions",
    "stream_bytes",
]

log = logging.getLogger(__name__)

# Scrape every target at most once per this many seconds unless told (the ingest job passes the trigger interval).
DEFAULT_INTERVAL_S = 10.0
# A trigger fires on its interval's boundaries but the scrape lands a few milliseconds into it; a scrape that is due
# within this fraction of the interval is taken now, or a scrape a hair under one interval after the previous one
# would wait a whole extra trigger.
INTERVAL_SLACK = 0.1
# An unlisted target (broker stopped, cluster.json rewritten on a restart) keeps its stream position this long so
# that its stream continues when it is back; then it leaves the offsets, which stay small under port churn.
TARGET_RETENTION_S = 3600.0
# The answers of one batch are packed into input partitions of about this many bytes (the file source's piece size):
# a few small answers make one task, a big backfill of many targets several.
PARTITION_BYTES = SPLIT_BYTES


@dataclass(frozen=True)
class PlannedScrape:
    """One scrape of a batch: where its records go (target, stream position) and its outcome."""

    url: str
    cluster: str
    broker_id: int | None
    base: int  # stream position of its first byte
    scrape: Scrape


class ScrapePartition(InputPartition):
    """Planned scrapes read by one task, their answers inside."""

    def __init__(self, scrapes: list[PlannedScrape]) -> None:
        self.scrapes = scrapes


def scrape_partitions(planned: list[PlannedScrape]) -> list[ScrapePartition]:
    """`planned` in input partitions of about PARTITION_BYTES each, in order."""
    return [ScrapePartition(g) for g in pack(planned, lambda p: len(p.scrape.data), PARTITION_BYTES)]


def read_partition(partition: InputPartition) -> Iterator[Any]:
    """The raw records (pyarrow RecordBatches) of a ScrapePartition's scrapes."""
    assert isinstance(partition, ScrapePartition)
    for planned in partition.scrapes:
        batch = read_scrape(planned)
        if batch is not None:
            yield batch


def read_scrape(planned: PlannedScrape) -> Any:
    """The raw records of one planned scrape as a pyarrow RecordBatch (None when its answer holds no record)."""
    got = planned.scrape
    if got.ok:
        texts, offsets, sizes = buffer_records(got.data, planned.base, "metrics")
    else:
        texts, offsets, sizes = [got.data.decode("utf-8", errors="replace")], [planned.base], [len(got.data)]
    if not texts:
        return None
    return records_batch(texts, offsets, sizes, cluster=planned.cluster, broker_id=planned.broker_id, kind=got.kind,
                         source=planned.url, ingest_ts=got.ts)


def stream_bytes(got: Scrape) -> int:
    """How far a scrape advances its target's stream: the answer, or the failure record's text and its newline."""
    return len(got.data) if got.ok else len(got.data) + 1


def entry_scrapes(entry: dict[str, Any]) -> list[tuple[int, int]]:
    """(scrape time, stream position) of each scrape a target's offset entry names."""
    listed = entry.get("scrapes") or [[entry["ts"], entry["from"]]]
    return [(int(ts), int(base)) for ts, base in listed]


def planned_scrapes(store: ScrapeStore, start: dict[str, Any], end: dict[str, Any], *, lost_ok: bool = True
                    ) -> list[PlannedScrape]:
    """The scrapes the offset range (start, end] names, with their answers from `store`, in the order a batch reads
    them; an answer the store no longer holds is a `source-error` record ("scrape lost"), or, with `lost_ok` false,
    a LookupError."""
    out = []
    for url, e in sorted(end["targets"].items()):
        s = start["targets"].get(url)
        if s is not None and int(s["ts"]) == int(e["ts"]):
            continue
        for ts, base in entry_scrapes(e):
            got = store.get(url, ts)
            if got is None:
                if not lost_ok:
                    raise LookupError(f"the answer of the scrape of {url} at {ts} ms is not kept")
                log.warning("prometheus target %s: the answer of the scrape at %d ms is gone; recorded as lost",
                            url, ts)
                text = (f"scrape lost: the answer of the scrape at {ts} ms was not kept for this replayed batch "
                        "(no spool); it is not scraped again")
                got = Scrape(ts, SOURCE_ERROR_FORMAT, text.encode("utf-8"))
            out.append(PlannedScrape(url, str(e["cluster"]), e.get("broker_id"), base, got))
    return out


def scrape_batch_bytes(start: dict[str, Any], end: dict[str, Any]) -> int | None:
    """Bytes of answers (and failure records) a `planewatch_prometheus` micro-batch reads, from its offsets alone;
    None if they are not such offsets."""
    targets, before = end.get("targets"), start.get("targets")
    if not isinstance(targets, dict) or not isinstance(before, dict):
        return None
    total = 0
    for url, e in targets.items():
        s = before.get(url)
        if s is not None and int(s["ts"]) == int(e["ts"]):
            continue  # not scraped in this batch
        total += max(0, int(e["offset"]) - int(e["from"]))
    return total


def logged_scrape_records(checkpoint: str, batch_id: int) -> Iterator[Any] | None:
    """The raw records (pyarrow RecordBatches, as `read` yields them, one scrape at a time) of batch `batch_id` of the
    query checkpointed at `checkpoint`, read in this process from Spark's offset log and the query's spool
    (jobs.sources.checkpoints SCRAPE_SPOOL_DIR), which holds a batch's answers until the next batch is planned; None
    when the log or the spool cannot say (the caller then reads the batch through Spark)."""
    end = logged_offset(checkpoint, batch_id)
    start = logged_offset(checkpoint, batch_id - 1) if batch_id > 0 else {"targets": {}}
    if end is None or start is None or "targets" not in end or "targets" not in start:
        return None
    spool = os.path.join(checkpoint, SCRAPE_SPOOL_DIR)
    if not os.path.isdir(spool):
        return None
    try:
        planned = planned_scrapes(ScrapeStore(spool), start, end, lost_ok=False)
    except LookupError:
        return None
    return (b for b in map(read_scrape, planned) if b is not None)


def _json_option(options: dict[str, str], key: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(options.get(key) or "[]")
    except ValueError as exc:
        raise PipelineIOError(f"planewatch_prometheus option {key}: not JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise PipelineIOError(f"planewatch_prometheus option {key}: expected a JSON list of objects")
    return value


def _positive(options: dict[str, str], key: str, default: float) -> float:
    try:
        value = float(options.get(key) or default)
    except ValueError as exc:
        raise PipelineIOError(f"planewatch_prometheus option {key}: not a number") from exc
    if value <= 0:
        raise PipelineIOError(f"planewatch_prometheus option {key}: must be positive, got {value}")
    return value


class PrometheusStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of `planewatch_prometheus` (see the module docstring); `clock` returns epoch seconds."""

    def __init__(self, options: dict[str, str], clock: Callable[[], float] = time.time) -> None:
        # guards the queue, the per-target clocks and the store against the scraper; reentrant: a scrape that ends
        # before its callback is added runs the callback at once, under the lock its starter holds
        self._lock = threading.RLock()
        self._settled = threading.Condition(self._lock)  # notified as each scrape's answer is queued
        self._queue: list[tuple[Target, Scrape]] = []  # answers spooled and not yet taken into a batch
        self._last_ts: dict[str, int] = {}  # url -> time (ms) of its latest scrape
        self._scraper: threading.Thread | None = None
        self._stopping = threading.Event()
        ahead = (options.get("scrapeahead") or "false").lower()
        if ahead not in ("true", "false"):
            raise PipelineIOError(f"planewatch_prometheus option scrapeAhead: true or false, got {ahead!r}")
        self.scrape_ahead = ahead == "true"
        self.static = _json_option(options, "targets")
        self.cluster_json = _json_option(options, "clusterjson")
        for entry in self.static:
            if not entry.get("url"):
                raise PipelineIOError("planewatch_prometheus option targets: every target needs a url")
        for entry in self.cluster_json:
            if not entry.get("path"):
                raise PipelineIOError("planewatch_prometheus option clusterJson: every entry needs a path")
        if not self.static and not self.cluster_json:
            raise PipelineIOError("planewatch_prometheus needs option targets or clusterJson")
        self.cluster = options.get("cluster") or None
        self.default_cluster = options.get("defaultcluster", "default")
        self.interval_s = _positive(options, "interval", DEFAULT_INTERVAL_S)
        self.timeout_s = _positive(options, "timeout", DEFAULT_TIMEOUT_S)
        self.store = ScrapeStore(options.get("spooldir") or None)
        self.clock = clock
        self.available_now = False
        self._once_end: dict[str, Any] | None = None
        self._reported: dict[str, str] = {}  # url or cluster.json -> the last problem logged (logged on change)
        self.pacing = ScrapePacing(self.timeout_s, self.interval_s)  # per-target timeouts and back-offs
        self._inflight: dict[str, Future[Scrape]] = {}  # url -> its scrape under way
        self._pool = ThreadPoolExecutor(max_workers=SCRAPE_THREADS, thread_name_prefix="scrape")

    # The reader is pickled with its read function for the executors, which only read partitions: the scraper's
    # thread, lock and queue stay with the driver's reader.
    _DRIVER_ONLY = ("_lock", "_settled", "_queue", "_scraper", "_stopping", "_pool", "_inflight")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._DRIVER_ONLY}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._queue, self._scraper, self._stopping = threading.RLock(), [], None, threading.Event()
        self._settled = threading.Condition(self._lock)
        self._inflight, self._pool = {}, ThreadPoolExecutor(max_workers=SCRAPE_THREADS, thread_name_prefix="scrape")

    def initialOffset(self) -> dict[str, Any]:
        return {"targets": {}}

    def prepareForTriggerAvailableNow(self) -> None:
        # availableNow (--once): one scrape of every target, whatever the interval; the query ends after its batch.
        self.available_now = True
        self._once_end = None

    def _targets(self) -> list[Target]:
        targets, problems = resolve_targets(self.static, self.cluster_json, self.cluster, self.default_cluster)
        for problem in problems:
            where = problem.split(": ", 1)[0]
            if self._reported.get(where) != problem:
                log.warning("prometheus targets: %s", problem)
                self._reported[where] = problem
        return targets

    def _report(self, url: str, got: Scrape) -> None:
        state = "up" if got.ok else got.data.decode("utf-8", errors="replace").split("\n", 1)[0]
        if self._reported.get(url, "up") != state:
            log.warning("prometheus target %s: %s", url, "up again" if got.ok else state)
        self._reported[url] = state

    def scrape_due(self, wait: bool = True) -> list[Target]:
        """Start a scrape of every listed target that is due (its latest scrape at least the interval old, or any
        with availableNow), not still being scraped and not backed off (jobs.sources.scrape_pacing), each with its own
        timeout; each answer is queued as it lands (`_landed`), so a slow target delays no other. `wait`: return
        once this round's answers are queued (the scraper thread does not wait). Returns the targets listed now."""
        now = self.clock()
        targets = self._targets()
        due_after_s = 0.0 if self.available_now else self.interval_s * (1.0 - INTERVAL_SLACK)
        started = False
        with self._lock:
            self.pacing.forget({t.url for t in targets} | set(self._inflight))
            due = [t for t in targets
                   if t.url not in self._inflight
                   and (t.url not in self._last_ts or now - self._last_ts[t.url] / 1000 >= due_after_s)
                   and (self.available_now or self.pacing.may_ask(t.url, now))]
            for t in due:
                timeout_s = self.pacing.timeout_for(t.url)
                fut = self._pool.submit(scrape, t.url, timeout_s, MAX_BODY_BYTES, int(self.clock() * 1000))
                self._inflight[t.url] = fut
                fut.add_done_callback(functools.partial(self._landed, t, timeout_s, time.monotonic()))
                started = True
        if started and wait:
            urls = [t.url for t in due]
            with self._settled:  # until every answer of the round is queued (by its callback, after the future ends)
                self._settled.wait_for(lambda: not any(u in self._inflight for u in urls))
        return targets

    def _landed(self, t: Target, timeout_s: float, began: float, fut: Future[Scrape]) -> None:
        """A scrape ended: pace the target by it, spool and queue its answer."""
        outcome = fut.result()  # scrape() never raises
        took_s = time.monotonic() - began
        with self._lock:
            self._inflight.pop(t.url, None)
            if outcome.timed_out:
                self.pacing.timed_out(t.url, timeout_s, self.clock())
                log.warning("prometheus target %s: timed out after %.1f s (%d timeout(s) so far; next timeout %.1f s)",
                            t.url, timeout_s, self.pacing.timeouts(t.url), self.pacing.timeout_for(t.url))
            elif outcome.answered:
                self.pacing.answered(t.url, took_s)
            prev = self._last_ts.get(t.url)
            if prev is not None and outcome.ts_ms <= prev:  # a clock step back: keep times increasing
                outcome = replace(outcome, ts_ms=prev + 1)
            self._report(t.url, outcome)
            self.store.put(t.url, outcome)
            self._last_ts[t.url] = outcome.ts_ms
            self._queue.append((t, outcome))
            self._settled.notify_all()

    def _scrape_ahead(self) -> None:
        """The scraper thread: `scrape_due` at least once a second (each target only when due) until stopped."""
        while not self._stopping.is_set():
            try:
                self.scrape_due(wait=False)
            except Exception:  # a scrape must never end the stream: the next tick tries again
                log.exception("prometheus scraper: a round of scrapes failed")
            self._stopping.wait(min(1.0, self.interval_s * INTERVAL_SLACK))

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        del limit  # every queued answer: the answers are the batch
        if self.available_now and self._once_end is not None:
            return self._once_end
        before: dict[str, dict[str, Any]] = start["targets"]
        with self._lock:
            for url, entry in before.items():  # a restarted query: each target's clock from the logged offsets
                self._last_ts.setdefault(url, int(entry["ts"]))
        if not self.scrape_ahead or self.available_now:
            targets = self.scrape_due()
        elif self._scraper is None:  # the first batch scrapes at once, as without the thread
            targets = self.scrape_due()
            self._scraper = threading.Thread(target=self._scrape_ahead, name="planewatch-prometheus-scraper",
                                             daemon=True)
            self._scraper.start()
        else:
            targets = self._targets()
        now = self.clock()
        listed = {t.url for t in targets}
        with self._lock:
            # the previous batch committed before Spark plans this one; answers queued since stay
            self.store.clear(keep={(t.url, got.ts_ms) for t, got in self._queue})
            taken, self._queue = self._queue, []
        end: dict[str, dict[str, Any]] = {
            url: entry for url, entry in before.items()
            if url in listed or now - int(entry["ts"]) / 1000 < TARGET_RETENTION_S
        }
        fresh: set[str] = set()
        for t, got in sorted(taken, key=lambda pair: pair[1].ts_ms):
            if t.url not in fresh:  # the target's first scrape in this batch continues its stream
                fresh.add(t.url)
                base = int(before[t.url]["offset"]) if t.url in before else 0
                end[t.url] = {"cluster": t.cluster, "broker_id": t.broker_id, "ts": got.ts_ms, "from": base,
                              "offset": base + stream_bytes(got)}
                continue
            e = end[t.url]
            e["scrapes"] = [*(e.get("scrapes") or [[e["ts"], e["from"]]]), [got.ts_ms, e["offset"]]]
            e["ts"], e["offset"] = got.ts_ms, e["offset"] + stream_bytes(got)
        offsets = {"targets": end}
        if end == before:
            offsets = start  # nothing new: the same offset, so Spark runs no (empty) micro-batch
        if self.available_now:
            self._once_end = offsets
        return offsets

    def stop(self) -> None:
        """The query stopped: the scraper thread ends."""
        self._stopping.set()
        if self._scraper is not None:
            self._scraper.join(timeout=self.pacing.cap_s + 1.0)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def planned(self, start: dict[str, Any], end: dict[str, Any]) -> list[PlannedScrape]:
        """The scrapes the range (start, end] names, with their answers (a lost answer as a `source-error`)."""
        return planned_scrapes(self.store, start, end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ScrapePartition]:
        return scrape_partitions(self.planned(start, end))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition)

    def commit(self, end: dict[str, Any]) -> None:
        with self._lock:
            for url, e in end["targets"].items():
                for ts, _ in entry_scrapes(e):
                    self.store.forget(url, ts)


class PrometheusStreamSource(DataSource):
    """`planewatch_prometheus`: Prometheus endpoints scraped every trigger, one raw row per exposition line (or per
    failed scrape).

    Options: `targets` (JSON list of {url, cluster?, broker_id?}), `clusterJson` (JSON list of {path, cluster?}: a
    planewatch cluster.json or its directory, re-read every trigger), `cluster` (for every target without its own),
    `defaultCluster`, `interval` (seconds between scrapes of a target, default 10), `timeout` (seconds per scrape,
    default 5), `spoolDir` (where answers wait for their batch to commit; without it a replayed batch's answers are
    recorded as lost), `scrapeAhead` (true: a thread scrapes on the interval's clock, whatever the batches do).
    """

    @classmethod
    def name(cls) -> str:
        return "planewatch_prometheus"

    def schema(self) -> str:
        return OUTPUT_SCHEMA_DDL

    def streamReader(self, schema: StructType) -> PrometheusStreamReader:
        return PrometheusStreamReader({str(k).lower(): str(v) for k, v in self.options.items()})
