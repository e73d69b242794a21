"""Scraping Prometheus endpoints for the `planewatch_prometheus` source (HTTP and file I/O only, no Spark).

Theory of operation:

* A **target** is one endpoint (`url`) with the cluster and broker id its samples belong to. Targets come from the
  configuration and from planewatch `cluster.json` files (`brokers[]` and KRaft `controllers[]` entries with a
  `prometheus` URL), re-read on every trigger because brokers come and go and ports change on restart.
  `resolve_targets` is pure apart from reading those files.
* `scrape` GETs one URL within a deadline and a body limit and classifies the answer: Prometheus text (the body,
  byte for byte, as a `.prom` file would hold it) or a failure. A failure is not an exception: it becomes the text
  of ONE raw record of metric format `source-error` ("scrape failed: connection refused", plus the head of what came
  back when something did), which the parser quarantines with stage `source`. So a target that is down or answers
  garbage is counted in `quarantine` and `dq_results` like any bad input, and the pipeline goes on.
* `ScrapeStore` keeps the answers of planned scrapes until their batch commits: in memory, and in a spool directory
  (one file per scrape, written before the offsets that name it are returned to Spark) so that a batch replayed after
  a crash reads the very answers its logged offsets name instead of scraping again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.client
import json
import logging
import os
import socket
import ssl
import time
import urllib.parse
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.sources.paths import SNIFF_BYTES, sniff
from schemas.routes import SOURCE_ERROR_FORMAT

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ERROR_SAMPLE_BYTES",
    "MAX_BODY_BYTES",
    "PROMETHEUS_FORMAT",
    "SCRAPE_THREADS",
    "Scrape",
    "ScrapeStore",
    "Target",
    "failed",
    "resolve_targets",
    "scrape",
]

log = logging.getLogger(__name__)

PROMETHEUS_FORMAT = "prometheus"
# An answer larger than this fails the scrape (Prometheus' body_size_limit does the same) rather than being cut: a cut
# answer ends in a partial line. A JMX exporter of a broker with ten thousand partitions answers a few MiB; every
# answer of a batch is held by the driver until the batch commits.
MAX_BODY_BYTES = 32 * 1024 * 1024
# A whole scrape (connect, request, answer) must finish within this many seconds unless configured (timeout_s). A JMX
# exporter answers in well under a second; a scrape blocks its trigger, so a black-holed target must not hold every
# micro-batch for long (Prometheus' own default of 10 s is meant for a scraper that is not on the batch's path).
DEFAULT_TIMEOUT_S = 5.0
# Targets are scraped in parallel, so N slow targets cost about one timeout, not N; the threads only wait on sockets.
SCRAPE_THREADS = 8
# A failed scrape's record keeps at most this much of what came back (an HTML error page, a JSON document): enough to
# tell what answered, bounded so a garbage answer does not bloat the quarantine.
ERROR_SAMPLE_BYTES = 1024
READ_CHUNK_BYTES = 64 * 1024
# Prometheus text format 0.0.4 first (what a JMX exporter and the reference broker serve), anything else tolerated so
# that a wrong answer is seen and reported rather than refused with 406.
ACCEPT = "text/plain;version=0.0.4;q=1.0,*/*;q=0.1"
USER_AGENT = "planewatch-scraper"
CLUSTER_JSON = "cluster.json"


@dataclass(frozen=True)
class Target:
    """One endpoint and whose samples it serves."""

    url: str
    cluster: str
    broker_id: int | None


@dataclass(frozen=True)
class Scrape:
    """The outcome of one scrape at `ts_ms` (epoch milliseconds, the request's start).

    `kind` is the raw records' metric format: `prometheus` (`data` is the answer as served) or `source-error` (`data`
    is the UTF-8 text of the one record that reports the failure).
    """

    ts_ms: int
    kind: str
    data: bytes

    @property
    def ok(self) -> bool:
        return self.kind == PROMETHEUS_FORMAT

    @property
    def timed_out(self) -> bool:
        """The target did not answer within the scrape's timeout."""
        return not self.ok and self.data.startswith(_FAILED + _TIMED_OUT)

    @property
    def answered(self) -> bool:
        """Something answered over HTTP (Prometheus text, an error status, an empty or foreign answer)."""
        return self.ok or self.data.startswith(_ANSWERED_PREFIXES)

    @property
    def ts(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.ts_ms / 1000, dt.UTC)


_FAILED = b"scrape failed: "
_TIMED_OUT = b"timed out"
# The failure reasons of a target that answered (jobs.sources.scrape_pacing times its answers).
_ANSWERED = (b"HTTP ", b"empty answer", b"answer is not Prometheus text", b"answer larger than")
_ANSWERED_PREFIXES = tuple(_FAILED + a for a in _ANSWERED)


def failed(ts_ms: int, reason: str, answer: bytes = b"") -> Scrape:
    """A failed scrape: one `source-error` record, "scrape failed: <reason>" (and the head of the answer, if any)."""
    text = f"{_FAILED.decode()}{reason}"
    if answer:
        text += "\n" + answer[:ERROR_SAMPLE_BYTES].decode("utf-8", errors="replace")
    return Scrape(ts_ms, SOURCE_ERROR_FORMAT, text.encode("utf-8"))


# --------------------------------------------------------------------------------------------------------- targets


def _node_id(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _cluster_json_targets(path: str, cluster: str) -> list[Target]:
    """The endpoints a planewatch cluster.json lists (brokers, then KRaft controllers); raises OSError/ValueError."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("running") is False:
        return []  # a stopped cluster: its endpoints are gone on purpose, not down
    out: list[Target] = []
    for key in ("brokers", "controllers"):
        nodes = doc.get(key) or []
        if not isinstance(nodes, list):
            raise ValueError(f"{key} is not a list")
        for node in nodes:
            url = node.get("prometheus") if isinstance(node, dict) else None
            if isinstance(url, str) and url:
                out.append(Target(url, cluster, _node_id(node.get("id"))))
    return out


def _cluster_name(path: str, root: Any) -> str:
    """The first directory level under `root` when the cluster.json lies deeper in it, else its directory's name."""
    if isinstance(root, str) and root:
        rel = os.path.relpath(path, os.path.abspath(root))
        parts = rel.split(os.sep)
        if not rel.startswith("..") and len(parts) > 1:
            return parts[0]
    return os.path.basename(os.path.dirname(path))


def resolve_targets(
    static: Sequence[Mapping[str, Any]],
    cluster_json: Sequence[Mapping[str, Any]],
    cluster: str | None,
    default_cluster: str,
) -> tuple[list[Target], list[str]]:
    """(targets, problems): the configured targets, then those of each cluster.json, one per URL (first wins).

    `static`: {url, cluster?, broker_id?}; `cluster_json`: {path (the file or its directory), cluster?, root?}. A
    target's cluster is its own `cluster`, else `cluster` (the pipeline-wide name), else, for a cluster.json under
    `root` (the file source's tree), the first directory level under it (the name the cluster's log files get),
    else the directory holding cluster.json (cluster.json targets) or `default_cluster`. A cluster.json that cannot
    be read is a problem (a cluster that is not started yet has none), not an error: its targets are simply absent
    this time; one that says `"running": false` (a stopped cluster) has none.
    """
    targets: list[Target] = []
    problems: list[str] = []
    for entry in static:
        targets.append(Target(str(entry["url"]), str(entry.get("cluster") or cluster or default_cluster),
                              _node_id(entry.get("broker_id"))))
    for entry in cluster_json:
        path = str(entry["path"])
        if os.path.isdir(path):
            path = os.path.join(path, CLUSTER_JSON)
        name = entry.get("cluster") or cluster or _cluster_name(os.path.abspath(path), entry.get("root"))
        try:
            targets += _cluster_json_targets(path, str(name))
        except (OSError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
    seen: set[str] = set()
    unique = []
    for t in targets:
        if t.url not in seen:
            seen.add(t.url)
            unique.append(t)
    return unique, problems


# ---------------------------------------------------------------------------------------------------------- scrape


class _ScrapeFailed(Exception):
    """A scrape that got no usable HTTP answer; the message is the reason."""


def _get(url: str, timeout_s: float, max_bytes: int) -> tuple[int, str, str, bytes]:
    """(status, reason, content type, body) of GET `url`, all of it within `timeout_s`, at most `max_bytes`."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _ScrapeFailed(f"not an http(s) URL: {url!r}")
    deadline = time.monotonic() + timeout_s
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout_s)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    try:
        conn.connect()
        # The socket object itself: the response reads through it even after the connection hands it over
        # (`Connection: close`), so each read below waits only for what is left of the deadline.
        sock = conn.sock
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", path, headers={"Accept": ACCEPT, "Accept-Encoding": "identity", "User-Agent": USER_AGENT})
        resp = conn.getresponse()
        declared = resp.getheader("Content-Length") or ""
        if declared.isdigit() and int(declared) > max_bytes:
            raise _ScrapeFailed(f"answer larger than {max_bytes} bytes (Content-Length {declared})")
        chunks: list[bytes] = []
        total = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if sock is not None:
                sock.settimeout(left)
            chunk = resp.read1(READ_CHUNK_BYTES)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise _ScrapeFailed(f"answer larger than {max_bytes} bytes")
            chunks.append(chunk)
        return resp.status, resp.reason or "", resp.getheader("Content-Type") or "", b"".join(chunks)
    except TimeoutError:
        raise _ScrapeFailed(f"timed out after {timeout_s:g} s") from None
    except ConnectionRefusedError:
        raise _ScrapeFailed("connection refused") from None
    except socket.gaierror as exc:
        raise _ScrapeFailed(f"cannot resolve {parts.hostname}: {exc.strerror}") from None
    except ssl.SSLError as exc:
        raise _ScrapeFailed(f"TLS error: {exc.reason or exc}") from None
    except http.client.HTTPException as exc:  # not HTTP at all (another protocol on the port), or cut short
        raise _ScrapeFailed(f"no valid HTTP answer ({type(exc).__name__})") from None
    except OSError as exc:
        raise _ScrapeFailed(exc.strerror or str(exc) or type(exc).__name__) from None
    finally:
        conn.close()


def scrape(url: str, timeout_s: float = DEFAULT_TIMEOUT_S, max_bytes: int = MAX_BODY_BYTES,
           now_ms: int | None = None) -> Scrape:
    """One scrape of `url`: Prometheus text, or a `source-error` record saying why not. Never raises."""
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        status, reason, ctype, body = _get(url, timeout_s, max_bytes)
    except _ScrapeFailed as exc:
        return failed(ts, str(exc))
    if status != 200:
        return failed(ts, f"HTTP {status} {reason}".rstrip(), body)
    if not body.strip():
        return failed(ts, "empty answer (an exporter always serves samples)")
    if sniff(body[:SNIFF_BYTES]) != ("metrics", PROMETHEUS_FORMAT):
        return failed(ts, f"answer is not Prometheus text (HTTP {status}, Content-Type {ctype or 'none'})", body)
    return Scrape(ts, PROMETHEUS_FORMAT, body)


# ----------------------------------------------------------------------------------------------------------- store


class ScrapeStore:
    """The answers of planned, not yet committed scrapes, by (url, scrape time).

    Held in memory for the batch being planned, and written to `spool_dir` (when given) before the offsets naming
    them go to Spark: a batch replayed by a restarted query reads them from there. File per scrape:
    `<sha1(url)[:16]>-<ts_ms>.<prom|err>`, written to a temporary name and renamed (a reader never sees half a file).
    Like Spark's own offset log on a local disk, the files survive a killed process, not a lost page cache.
    """

    def __init__(self, spool_dir: str | None) -> None:
        self.spool_dir = spool_dir
        self._memory: dict[tuple[str, int], Scrape] = {}
        if spool_dir:
            os.makedirs(spool_dir, exist_ok=True)

    @staticmethod
    def _stem(url: str, ts_ms: int) -> str:
        return f"{hashlib.sha1(url.encode()).hexdigest()[:16]}-{ts_ms}"

    def _file(self, url: str, ts_ms: int, kind: str) -> str:
        assert self.spool_dir is not None
        ext = "prom" if kind == PROMETHEUS_FORMAT else "err"
        return os.path.join(self.spool_dir, f"{self._stem(url, ts_ms)}.{ext}")

    def put(self, url: str, got: Scrape) -> None:
        """Keep `got` until its batch commits."""
        self._memory[(url, got.ts_ms)] = got
        if self.spool_dir:
            final = self._file(url, got.ts_ms, got.kind)
            tmp = f"{final}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(got.data)
            os.replace(tmp, final)

    def get(self, url: str, ts_ms: int) -> Scrape | None:
        """The answer of the scrape of `url` at `ts_ms`, or None when it was not kept."""
        got = self._memory.get((url, ts_ms))
        if got is not None or not self.spool_dir:
            return got
        for kind in (PROMETHEUS_FORMAT, SOURCE_ERROR_FORMAT):
            try:
                with open(self._file(url, ts_ms, kind), "rb") as fh:
                    return Scrape(ts_ms, kind, fh.read())
            except FileNotFoundError:
                continue
        return None

    def forget(self, url: str, ts_ms: int) -> None:
        """Drop the scrape of `url` at `ts_ms` (its batch committed)."""
        self._memory.pop((url, ts_ms), None)
        if self.spool_dir:
            for kind in (PROMETHEUS_FORMAT, SOURCE_ERROR_FORMAT):
                try:
                    os.remove(self._file(url, ts_ms, kind))
                except FileNotFoundError:
                    pass

    def clear(self, keep: Collection[tuple[str, int]] = ()) -> None:
        """Drop everything but the scrapes `keep` names ((url, time) pairs: answers no batch has taken yet). Called
        when the next batch is planned: every older scrape is then either committed or was never named by a logged
        offset (a crash between spooling and Spark logging the offsets)."""
        self._memory = {k: v for k, v in self._memory.items() if k in keep}
        if self.spool_dir:
            kept = {self._stem(url, ts) for url, ts in keep}
            for name in os.listdir(self.spool_dir):
                if name.split(".", 1)[0] in kept:
                    continue
                try:
                    os.remove(os.path.join(self.spool_dir, name))
                except FileNotFoundError:
                    pass

    def pending(self) -> list[str]:
        """The spool's file names (for tests and logs)."""
        return sorted(os.listdir(self.spool_dir)) if self.spool_dir else []
