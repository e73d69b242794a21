"""kafka-request.log's JSON message matches Kafka 2.8's byte for byte."""

from __future__ import annotations

import json

from broker.network.request_log import format_completed_request, java_double, nanos_to_ms


def test_java_double() -> None:
    assert [java_double(v) for v in (0.085, 1.0, 0.0, 1e-4, 1e7, 13980.214, 0.001)] == [
        "0.085", "1.0", "0.0", "1.0E-4", "1.0E7", "13980.214", "0.001"]
    assert nanos_to_ms(85_999) == 0.085
    assert nanos_to_ms(-5) == 0.0


def test_completed_request_is_kafka_2_8_json() -> None:
    msg = format_completed_request(
        api_key=4, api_version=5, correlation_id=17, client_id="1", api_key_name="LEADER_AND_ISR",
        request={"controllerId": 1, "controllerEpoch": 9, "brokerEpoch": -1},
        response={"errorCode": 0, "topics": []},
        connection_id="127.0.0.1:9093-127.0.0.1:51432-3",
        total_time_ms=13980.214, request_queue_time_ms=0.061, local_time_ms=13979.7, remote_time_ms=0.0,
        throttle_time_ms=0, response_queue_time_ms=0.09, send_time_ms=0.311, listener="CONTROLLER",
    )
    assert msg == (
        'Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":4,"requestApiVersion":5,'
        '"correlationId":17,"clientId":"1","requestApiKeyName":"LEADER_AND_ISR"},'
        '"request":{"controllerId":1,"controllerEpoch":9,"brokerEpoch":-1},"response":{"errorCode":0,"topics":[]},'
        '"connection":"127.0.0.1:9093-127.0.0.1:51432-3","totalTimeMs":13980.214,"requestQueueTimeMs":0.061,'
        '"localTimeMs":13979.7,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.09,"sendTimeMs":0.311,'
        '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"CONTROLLER",'
        '"clientInformation":{"softwareName":"unknown","softwareVersion":"unknown"}}'
    )
    body = json.loads(msg.removeprefix("Completed request:"))
    assert list(body) == ["isForwarded", "requestHeader", "request", "response", "connection", "totalTimeMs",
                          "requestQueueTimeMs", "localTimeMs", "remoteTimeMs", "throttleTimeMs",
                          "responseQueueTimeMs", "sendTimeMs", "securityProtocol", "principal", "listener",
                          "clientInformation"]


def test_completed_request_null_client_and_no_response() -> None:
    msg = format_completed_request(
        api_key=18, api_version=0, correlation_id=1, client_id=None, api_key_name="API_VERSIONS",
        request={}, response=None, connection_id="a:1-b:2-0", total_time_ms=1.0, request_queue_time_ms=0.0,
        local_time_ms=0.0, remote_time_ms=0.0, throttle_time_ms=0, response_queue_time_ms=0.0, send_time_ms=0.0,
        temporary_memory_bytes=10,
    )
    body = json.loads(msg.removeprefix("Completed request:"))
    assert body["requestHeader"]["clientId"] is None
    assert body["response"] == ""
    assert body["temporaryMemoryBytes"] == 10
    assert "messageConversionsTime" not in body
