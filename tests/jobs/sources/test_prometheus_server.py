"""planewatch_prometheus_server's reader against a real Prometheus (Debian's, backfilled with an hour it never
scraped): the hour read window by window with each sample once, a restart going on where the offsets say, a replayed
batch read from the spool; a target no rule maps, a server that fails, hangs, answers partially or refuses the
credentials."""

from __future__ import annotations

import crypt
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from jobs import SourceRefused
from jobs.sources.prometheus_query import label_rules, rules_json
from jobs.sources.prometheus_server import PrometheusServerReader
from planewatch.demo.processes import Child
from planewatch.kafka.prometheus import OperatorPrometheus, backfill
from schemas.routes import SOURCE_ERROR_FORMAT
from tests.jobs.sources.prometheus_helpers import (
    HISTORY_S,
    UNMAPPED_INSTANCE,
    History,
    backfilled_prometheus,
)
from tests.jobs.sources.scrape_helpers import answering, free_port, silent
from tests.kafka.tls import Tls, make_tls
from tests.polling import wait_until

pytestmark = [pytest.mark.integration]

# Reads of the hour: 10-minute windows from 70 minutes back, and the read that finds nothing new.
MAX_READS = 12


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    with backfilled_prometheus(tmp_path_factory.mktemp("prometheus")) as h:
        yield h


def _reader(url: str, spool: Path | None = None, **options: str) -> PrometheusServerReader:
    opts = {"url": url, "mapping": rules_json(label_rules(["jmx_exporter"])), "catchups": str(HISTORY_S + 600),
            **options}
    if spool is not None:
        opts["spooldir"] = str(spool)
    return PrometheusServerReader(opts)


def _batch(reader: PrometheusServerReader, start: dict[str, Any], end: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for part in reader.partitions(start, end) for b in reader.read(part) for row in b.to_pylist()]


def _drain(reader: PrometheusServerReader, start: dict[str, Any]) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """Every batch the reader plans from `start` until a read finds nothing new: (the batches' rows, the end)."""
    batches: list[list[dict[str, Any]]] = []
    for _ in range(MAX_READS):
        end = reader.latestOffset(start, None)
        if end == start:
            return batches, end
        batches.append(_batch(reader, start, end))
        reader.commit(end)
        start = end
    raise AssertionError(f"still reading after {MAX_READS} reads")


def _samples(rows: list[dict[str, Any]]) -> Counter[tuple[int | None, str]]:
    """(broker, sample line) of every Prometheus record."""
    return Counter((r["broker_id"], r["line"]) for r in rows if r["kind"] != SOURCE_ERROR_FORMAT)


def test_the_hour_is_read_window_by_window_each_sample_once_and_a_restart_goes_on(history: History,
                                                                                    tmp_path: Path) -> None:
    reader = _reader(history.url, tmp_path / "spool")
    batches, end = _drain(reader, reader.initialOffset())
    rows = [r for b in batches for r in b]
    samples = _samples(rows)
    assert max(samples.values()) == 1
    per_broker = Counter(broker for broker, _ in samples)
    # broker 3 stopped after 20 minutes: it holds nothing back, the others are read to the end
    assert per_broker == history.per_broker
    assert len(batches) >= HISTORY_S // 600  # ten minutes of Prometheus' time a read
    assert {r["cluster"] for r in rows if r["kind"] != SOURCE_ERROR_FORMAT} == {"prod"}
    # the lines are what the exporter served, without the target's labels, at the scrape's time
    assert any(line.startswith("kafka_network_requestchannel_controlplanerequestqueuesize 15 ") for _, line in samples)
    # a restarted query (a new reader) goes on from the logged offsets: nothing to read again
    again = _reader(history.url, tmp_path / "spool2")
    assert again.latestOffset(end, None) == end


def test_a_replayed_batch_reads_its_logged_answers_from_the_spool(history: History, tmp_path: Path) -> None:
    reader = _reader(history.url, tmp_path / "spool")
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    first = _batch(reader, start, end)
    # the driver died after Spark logged `end`: a new reader replays the batch from the spool, byte for byte
    replay = _batch(_reader(history.url, tmp_path / "spool"), start, end)
    assert replay == first
    assert first


def test_a_target_no_rule_maps_is_one_quarantined_record_per_batch_and_read_past(history: History,
                                                                                  tmp_path: Path) -> None:
    reader = _reader(history.url)
    batches, _end = _drain(reader, reader.initialOffset())
    errors = [r for b in batches for r in b if r["kind"] == SOURCE_ERROR_FORMAT]
    assert len(errors) == len(batches)  # one per batch: the unmapped target's
    head = errors[0]["line"].splitlines()[0]
    assert head.startswith(f"prometheus target not mapped: labels {{instance={UNMAPPED_INSTANCE},job=kafka}} give no "
                           "cluster and no broker")
    assert errors[0]["source"].endswith(f"instance={UNMAPPED_INSTANCE}")
    counted = sum(int(e["line"].split("; ")[1].split()[0]) for e in errors)
    assert counted == history.per_target  # each of its samples said once, none read as a broker's


def _start_at(history: History) -> dict[str, Any]:
    return {"until": (history.last_s - 300) * 1000, "targets": {}}


@pytest.mark.parametrize("failure", ["HTTP 500", "timeout", "not the API", "not an object"])
def test_a_failed_read_is_one_source_error_and_the_next_read_takes_the_same_samples(
        history: History, failure: str) -> None:
    start = _start_at(history)
    if failure == "HTTP 500":
        ctx = answering(500, json.dumps({"status": "error", "errorType": "internal", "error": "boom"}).encode(),
                        "application/json")
    elif failure == "timeout":
        ctx = silent()
    elif failure == "not an object":
        ctx = answering(200, b"[]", "application/json")
    else:
        ctx = answering(200)
    with ctx as url:
        broken = _reader(url.removesuffix("/metrics"), timeout="0.5")
        end = broken.latestOffset(start, None)
        rows = _batch(broken, start, end)
    assert [r["kind"] for r in rows] == [SOURCE_ERROR_FORMAT]
    assert rows[0]["line"].startswith("prometheus read failed: " + {
        "HTTP 500": "HTTP 500: internal: boom", "timeout": "timed out after 0.5 s",
        "not the API": "HTTP 200: not a Prometheus API answer",
        "not an object": "HTTP 200: not a Prometheus API answer"}[failure])
    assert end["until"] == start["until"]  # the positions stay
    healthy = _reader(history.url)
    after = healthy.latestOffset(end, None)
    direct = healthy.latestOffset(start, None)
    assert _samples(_batch(healthy, end, after)) == _samples(_batch(healthy, start, direct))


def test_once_a_failing_server_is_recorded_once_and_the_query_ends() -> None:
    with answering(503, b"Service Unavailable\n", "text/plain") as url:
        reader = _reader(url.removesuffix("/metrics"))
        reader.prepareForTriggerAvailableNow()
        start = reader.initialOffset()
        end = reader.latestOffset(start, None)
        assert [r["kind"] for r in _batch(reader, start, end)] == [SOURCE_ERROR_FORMAT]
        reader.commit(end)
        assert reader.latestOffset(end, None) == end  # said once: --once ends instead of looping on errors


def test_a_partial_answer_keeps_its_samples_and_says_so(tmp_path: Path) -> None:
    doc = {"status": "success", "warnings": ["remote read: store eu-2 unavailable"], "data": {
        "resultType": "matrix", "result": [
            {"metric": {"__name__": "kafka_controller_kafkacontroller_activecontrollercount", "job": "kafka",
                        "instance": "kafka-1.prod:7071"}, "values": [[1_800_000_000.0, "1"]]}]}}
    with answering(200, json.dumps(doc).encode(), "application/json") as url:
        reader = _reader(url.removesuffix("/metrics"))
        start = {"until": 1_799_999_000_000, "targets": {}}
        rows = _batch(reader, start, reader.latestOffset(start, None))
    kinds = Counter(r["kind"] for r in rows)
    assert kinds == {SOURCE_ERROR_FORMAT: 1, "prometheus": 1}
    assert any(r["line"] == "prometheus read partial: remote read: store eu-2 unavailable" for r in rows)


def test_refused_credentials_stop_the_run(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("wrong\n")
    with answering(401, b"Unauthorized\n", "text/plain") as url:
        reader = _reader(url.removesuffix("/metrics"), auth=json.dumps({"bearer_token_file": str(token)}))
        with pytest.raises(SourceRefused, match="HTTP 401: the server refused planewatch's credentials"):
            reader.latestOffset({"until": 0, "targets": {}}, None)


# One target per stack, as each stack's Prometheus labels it (the names are each stack's exporter rules').
STACK_TARGETS = {
    "jmx_exporter": ('job="kafka",instance="kafka-3.prod-us:7071"', ("prod-us", 3)),
    "strimzi": ('job="kafka/kafka-resources-metrics",instance="10.1.2.3:9404",namespace="kafka",'
                'strimzi_io_cluster="my-cluster",strimzi_io_kind="Kafka",pod="my-cluster-kafka-4"', ("my-cluster", 4)),
    "confluent": ('job="kafka-broker",instance="kafka5:1234",env="dev",hostname="kafka5"', ("dev", 5)),
}


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus holding a few minutes of one broker of each stack."""
    root = tmp_path_factory.mktemp("stacks")
    last = int(time.time()) - 60
    lines = ["# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge"]
    for labels, _ in STACK_TARGETS.values():
        lines += [f"kafka_server_replicamanager_underreplicatedpartitions{{{labels}}} 0 {t}"
                  for t in range(last - 300, last + 1, 15)]
    backfill(root / "data", "\n".join([*lines, "# EOF"]) + "\n")
    with OperatorPrometheus(root) as prom:
        yield prom.url


@pytest.mark.parametrize("preset", sorted(STACK_TARGETS))
def test_each_stacks_preset_maps_its_targets_read_from_prometheus(stacks: str, preset: str) -> None:
    reader = PrometheusServerReader({"url": stacks, "mapping": rules_json(label_rules([preset])), "catchups": "900"})
    batches, _ = _drain(reader, reader.initialOffset())
    mapped = {(r["cluster"], r["broker_id"]) for b in batches for r in b if r["kind"] != SOURCE_ERROR_FORMAT}
    assert STACK_TARGETS[preset][1] in mapped


USER, PASSWORD = "planewatch", "s3cret-for-prometheus"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Tls]]:
    """A Prometheus served over TLS (a CA of the test's) with basic auth, as an operator secures it
    (--web.config.file), holding a few minutes of one broker; yields its URL and the certificates."""
    root = tmp_path_factory.mktemp("secured")
    tls = make_tls(root / "tls")
    last = int(time.time()) - 60
    lines = [f'kafka_server_replicamanager_underreplicatedpartitions{{job="kafka",instance="kafka-1.prod:7071"}} 0 {t}'
             for t in range(last - 300, last + 1, 15)]
    backfill(root / "data", "\n".join(["# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge", *lines,
                                       "# EOF"]) + "\n")
    hashed = crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH))  # Prometheus takes bcrypt hashes
    web = root / "web.yml"
    web.write_text(yaml.safe_dump({"tls_server_config": {"cert_file": str(tls.broker), "key_file": str(tls.broker)},
                                   "basic_auth_users": {USER: hashed}}))
    (root / "prometheus.yml").write_text(yaml.safe_dump({"global": {"scrape_interval": "15s"}}))
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    child = Child("prometheus", [shutil.which("prometheus") or "prometheus", f"--config.file={root / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={root / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                                 f"--web.config.file={web}", "--log.level=warn"], root / "prometheus.log",
                  dict(os.environ))
    try:
        def ready() -> bool:
            try:
                return httpx.get(f"{url}/-/ready", verify=str(tls.ca), auth=(USER, PASSWORD), timeout=2).is_success
            except httpx.HTTPError:
                return False

        wait_until(ready, 60, "the secured Prometheus answers /-/ready", interval=0.2)
        yield url, tls
    finally:
        child.stop(10)


@pytest.mark.parametrize("case", ["right", "wrong password", "untrusted CA"])
def test_a_secured_prometheus_is_read_with_basic_auth_over_tls_and_refusals_stop_the_run(
        secured: tuple[str, Tls], tmp_path: Path, case: str) -> None:
    url, tls = secured
    secret = tmp_path / "password"
    secret.write_text(("wrong" if case == "wrong password" else PASSWORD) + "\n")
    auth = {"username": USER, "password_file": str(secret), "ca_file": str(tls.ca)}
    if case == "untrusted CA":
        auth["ca_file"] = str(make_tls(tmp_path / "other", "another CA").ca)
    reader = _reader(url, auth=json.dumps(auth), catchups="900")
    start = reader.initialOffset()
    if case == "right":
        rows = _batch(reader, start, reader.latestOffset(start, None))
        assert {(r["cluster"], r["broker_id"]) for r in rows} == {("prod", 1)}
        assert len(rows) > 1
        return
    message = "HTTP 401: the server refused" if case == "wrong password" else "TLS handshake failed"
    with pytest.raises(SourceRefused, match=message):
        reader.latestOffset(start, None)
