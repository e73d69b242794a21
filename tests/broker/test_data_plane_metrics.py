"""Data-plane observability: BrokerTopicMetrics, RequestMetrics names, kafka-request.log, metrics topic (issue 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.metrics.registry import Meter
from broker.protocol import ApiKey
from broker.protocol.records import decode_records, parse_batches
from tests.broker.data_plane_helpers import Wire, broker
from tests.broker.test_data_plane import FETCH_V, PRODUCE_V, batch, create, fetch_body, part, produce_body
from tests.polling import wait_until


def _count(server: object, mbean: str) -> float:
    metric = server.registry.get(mbean)  # type: ignore[attr-defined]
    assert isinstance(metric, Meter), mbean
    return float(metric.count)


@pytest.mark.timeout(60)
def test_topic_and_request_metrics_request_log_and_metrics_topic(tmp_path: Path) -> None:
    with broker(tmp_path, metric__reporter__topic="__planewatch_metrics", metrics__interval__ms=200) as server:
        w = Wire(server.bound_port("PLAINTEXT"))
        create(w, "obs")
        for i in range(10):
            assert part(w.call(ApiKey.PRODUCE, PRODUCE_V, produce_body("obs", batch(10, 10 * i))))["error_code"] == 0
        w.send_raw(__import__("broker.protocol", fromlist=["encode_request"]).encode_request(
            ApiKey.PRODUCE, PRODUCE_V, 999, "acks0", produce_body("obs", batch(5, 100), acks=0)))
        fetched = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("obs", 0)), parts="partitions")["records"]
        follower = w.call(ApiKey.FETCH, FETCH_V, fetch_body("obs", 0, replica_id=7))
        assert part(follower, parts="partitions")["error_code"] == 0
        bt = "kafka.server:type=BrokerTopicMetrics"
        assert _count(server, f"{bt},name=MessagesInPerSec,topic=obs") == 105
        assert _count(server, f"{bt},name=MessagesInPerSec") >= 105
        assert _count(server, f"{bt},name=BytesInPerSec,topic=obs") > 0
        assert _count(server, f"{bt},name=BytesOutPerSec,topic=obs") == len(fetched)
        rm = "kafka.network:type=RequestMetrics,name=RequestsPerSec"
        wait_until(lambda: server.registry.get(f"{rm},request=FetchFollower,version={FETCH_V}") is not None, 5,
                   "the FetchFollower request metric")
        assert _count(server, f"{rm},request=Produce,version={PRODUCE_V}") == 11
        assert _count(server, f"{rm},request=FetchConsumer,version={FETCH_V}") == 1
        assert _count(server, f"{rm},request=FetchFollower,version={FETCH_V}") == 1
        # the metrics topic receives the JSON samples through the local log
        samples: list[dict[str, object]] = []
        offset = [0]  # the next offset of the metrics topic to fetch

        def sampled() -> bool:
            resp = part(w.call(ApiKey.FETCH, FETCH_V, fetch_body("__planewatch_metrics", offset[0], max_wait_ms=300)),
                        parts="partitions")
            assert resp["error_code"] == 0
            data = resp["records"]
            for b in parse_batches(data):
                for r in decode_records(data, b):
                    assert r.key == b"1"
                    assert r.value is not None
                    samples.append(json.loads(r.value))
                    offset[0] = r.offset + 1
            return any(s["mbean"] == f"{bt},name=MessagesInPerSec,topic=obs" for s in samples)

        wait_until(sampled, 10, "a MessagesInPerSec sample of obs in the metrics topic")
        assert all(s["broker_id"] == 1 for s in samples)
        w.close()
    request_log = (tmp_path / "logs" / "kafka-request.log").read_text()
    lines = [ln for ln in request_log.splitlines() if "apiKey=PRODUCE" in ln or '"requestApiKeyName":"PRODUCE"' in ln]
    assert len(lines) >= 11, request_log[-2000:]
    assert "FETCH" in request_log
