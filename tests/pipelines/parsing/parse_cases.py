"""Log lines built from every format of FACTS.md sections 1, 2 and 6 (derived from the format strings, as FACTS.md
marks them), each with the whole row the parser must produce. Shared by the Python-engine and Spark-engine tests.

The state-change cases live in parse_cases_broker.py and parse_cases_controller.py, the shared helpers in
parse_case_base.py; this module assembles them with the layout, request-log and other cases."""

from __future__ import annotations

from tests.pipelines.parsing.parse_case_base import (
    RAW_BROKER,
    SC,
    TS,
    TS_DT,
    Case,
    apache,
)
from tests.pipelines.parsing.parse_cases_broker import BROKER_CASES
from tests.pipelines.parsing.parse_cases_controller import CONTROLLER_CASES

STATE_CASES: list[Case] = [*BROKER_CASES, *CONTROLLER_CASES]


# ---- layouts and prefixes: the same message in every wrapper
_MSG = "Handling LeaderAndIsr request correlationId 17 from controller 1 for 960 partitions"
_ROW = {
    "broker_id": 2,
    "role": "broker",
    "request": "LeaderAndIsr",
    "correlation_id": 17,
    "controller_id": 1,
    "partitions": 960,
    "event": "leader_and_isr_handling",
    "kafka_format": "2.6+",
    "message": _MSG,
    "level": "INFO",
    "ts": TS_DT,
    "logger": SC,
}
_APACHE = f"[{TS}] INFO [Broker id=2] {_MSG} ({SC})"
LAYOUT_CASES: list[Case] = [
    Case(f"{TS} INFO [Broker id=2] {_MSG} ({SC}) [data-plane-kafka-request-handler-1]", "state_change", _ROW),
    Case(
        f"2021-03-02 08:00:01 INFO  [data-plane-kafka-request-handler-1] logger:123 - [Broker id=2] {_MSG}",
        "state_change",
        {**_ROW, "ts": TS_DT.replace(microsecond=0), "logger": "logger"},
    ),
    Case(f"2024-05-10T09:12:44.101Z stdout F {_APACHE}", "state_change", _ROW),
    Case(f"2024-05-10T09:12:44.101234567+02:00 stderr P {_APACHE}", "state_change", _ROW),
    Case(f"kafka-1  | {_APACHE}", "state_change", _ROW),
    Case(f"2024-05-10 09:12:44,101 INFO  [harness] {_APACHE}", "state_change", _ROW),
    Case(
        f"2021/03/02 08:00:01.010 [logger] [Broker id=2] {_MSG}",
        "state_change",
        {**_ROW, "level": None, "logger": "logger"},
    ),
    Case(f"{_APACHE}\r", "state_change", _ROW),
    # a wrapped stack trace stays with its line (message keeps it)
    Case(
        f"[{TS}] ERROR [Broker id=2] Error while processing LeaderAndIsr request correlationId 5 received from "
        f"controller 1 epoch 3 for partition t-1 ({SC})\njava.lang.IllegalStateException: boom\n\tat kafka.Foo(x:1)",
        "state_change",
        {
            "broker_id": 2,
            "role": "broker",
            "request": "LeaderAndIsr",
            "correlation_id": 5,
            "controller_id": 1,
            "controller_epoch": 3,
            "topic": "t",
            "partition": 1,
            "partitions": 1,
            "event": "leader_and_isr_error",
            "kafka_format": "2.2+",
            "level": "ERROR",
            "ts": TS_DT,
            "logger": SC,
            "message": "Error while processing LeaderAndIsr request correlationId 5 received from controller 1 epoch 3 "
            "for partition t-1\njava.lang.IllegalStateException: boom\n\tat kafka.Foo(x:1)",
        },
    ),
    # a line hard-wrapped by a paste (samples/01): the joined line parses
    Case(
        f"[{TS}] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller 1 for 960 "
        "partitions (state.change.l\nogger)",
        "state_change",
        _ROW,
    ),
]

_REQ_JSON = (
    '{"isForwarded":false,"requestHeader":{"requestApiKey":4,"requestApiVersion":5,"correlationId":17,"clientId":"1",'
    '"requestApiKeyName":"LEADER_AND_ISR"},"request":{"controllerId":1,"controllerEpoch":9,"brokerEpoch":25},'
    '"response":{"errorCode":0},"connection":"127.0.0.1:9093-127.0.0.1:51432-3","totalTimeMs":13974.2,'
    '"requestQueueTimeMs":0.061,"localTimeMs":13973.7,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.09,'
    '"sendTimeMs":0.311,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"CONTROLLER",'
    '"clientInformation":{"softwareName":"unknown","softwareVersion":"unknown"}}'
)
_REQ_TEXT = (
    "RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=2, clientId=1, correlationId=44) -- {controller_id=1,"
    "controller_epoch=7,broker_epoch=25,topic_states=[{topic=orders,partition_states=[{partition=4,controller_epoch=7,"
    "leader=2,leader_epoch=12,isr=[2,3],zk_version=31,replicas=[1,2,3],is_new=false}]}],live_leaders=[{id=2,host=b2,"
    "port=9094}]},response:{error_code=0,partitions=[{topic=orders,partition=4,error_code=0}]} from connection "
    "10.0.0.1:9094-10.0.0.9:51432-3;totalTime:13980.214,requestQueueTime:0.061,localTime:13979.7,remoteTime:0.0,"
    "throttleTime:0.052,responseQueueTime:0.09,sendTime:0.311,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:CONTROLLER"
)
_REQ_TEXT_25 = (
    "RequestHeader(apiKey=METADATA, apiVersion=9, clientId=producer-1, correlationId=3) -- {topics=[],"
    "allow_auto_topic_creation=true,_tagged_fields={}},response:{throttle_time_ms=0,brokers=[]} from connection "
    "127.0.0.1:9092-127.0.0.1:50000-0;totalTime:1.5,requestQueueTime:0.1,localTime:1.0,remoteTime:0.0,"
    "throttleTime:0,responseQueueTime:0.2,sendTime:0.2,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT,clientInformation:ClientInformation(softwareName=apache-kafka-java, softwareVersion=2.5.0)"
)
_RQ_BASE = {"broker_id": RAW_BROKER, "ts": TS_DT, "security_protocol": "PLAINTEXT", "principal": "User:ANONYMOUS"}
RL = "kafka.request.logger"
REQUEST_CASES: list[Case] = [
    Case(
        apache("DEBUG", None, "Completed request:" + _REQ_JSON, RL),
        "request",
        {
            **_RQ_BASE,
            "api_key": 4,
            "api_name": "LeaderAndIsr",
            "api_version": 5,
            "correlation_id": 17,
            "client_id": "1",
            "listener": "CONTROLLER",
            "connection": "127.0.0.1:9093-127.0.0.1:51432-3",
            "total_time_ms": 13974.2,
            "request_queue_time_ms": 0.061,
            "local_time_ms": 13973.7,
            "remote_time_ms": 0.0,
            "throttle_time_ms": 0.0,
            "response_queue_time_ms": 0.09,
            "send_time_ms": 0.311,
            "error_code": 0,
            "controller_id": 1,
            "controller_epoch": 9,
            "broker_epoch": 25,
            "log_format": "json",
        },
        "request",
    ),
    Case(
        apache("DEBUG", None, "Completed request:" + _REQ_TEXT, RL),
        "request",
        {
            **_RQ_BASE,
            "api_key": 4,
            "api_name": "LeaderAndIsr",
            "api_version": 2,
            "correlation_id": 44,
            "client_id": "1",
            "listener": "CONTROLLER",
            "connection": "10.0.0.1:9094-10.0.0.9:51432-3",
            "total_time_ms": 13980.214,
            "request_queue_time_ms": 0.061,
            "local_time_ms": 13979.7,
            "remote_time_ms": 0.0,
            "throttle_time_ms": 0.052,
            "response_queue_time_ms": 0.09,
            "send_time_ms": 0.311,
            "error_code": 0,
            "controller_id": 1,
            "controller_epoch": 7,
            "broker_epoch": 25,
            "log_format": "text",
        },
        "request",
    ),
    Case(
        apache("DEBUG", None, "Completed request:" + _REQ_TEXT_25, RL),
        "request",
        {
            **_RQ_BASE,
            "api_key": 3,
            "api_name": "Metadata",
            "api_version": 9,
            "correlation_id": 3,
            "client_id": "producer-1",
            "listener": "PLAINTEXT",
            "connection": "127.0.0.1:9092-127.0.0.1:50000-0",
            "total_time_ms": 1.5,
            "request_queue_time_ms": 0.1,
            "local_time_ms": 1.0,
            "remote_time_ms": 0.0,
            "throttle_time_ms": 0.0,
            "response_queue_time_ms": 0.2,
            "send_time_ms": 0.2,
            "log_format": "text",
        },
        "request",
    ),
]

# ---- lines that must not become events
UNUSED = "no planewatch event for this message"
OTHER_CASES: list[Case] = [
    Case(
        apache(
            "INFO",
            "GroupCoordinator 1",
            "Preparing to rebalance group g in state PreparingRebalance",
            "kafka.coordinator.group.GroupCoordinator",
        ),
        "unused",
        {"reason": UNUSED},
    ),
    Case(
        apache("INFO", "Broker id=1", "Handling LeaderAndIsr request correlationId x from controller 1"),
        "unused",
        {"reason": "message text not recognised"},
    ),
    Case(
        apache("TRACE", None, "Processor 1 received request: {...}", "kafka.network.RequestChannel$"),
        "unused",
        {"reason": UNUSED},
        "request",
    ),
    Case("this line is not a Kafka log line at all", "rejected", {"reason": "no recognisable log4j layout"}),
    Case("", "rejected", {"reason": "no recognisable log4j layout"}),
    Case("\x00\x01\x02\ufffd\ufffd garbage \x01", "rejected", {"reason": "no recognisable log4j layout"}),
    Case(
        "[2024-13-45 99:00:00,000] INFO [Broker id=1] Deleting 3 partition(s). (state.change.logger)",
        "rejected",
        {"reason": "unparseable timestamp: 2024-13-45 99:00:00,000"},
    ),
    Case(
        "[yesterday at noon] INFO [Broker id=1] Deleting 3 partition(s). (state.change.logger)",
        "rejected",
        {"reason": "unparseable timestamp: yesterday at noon"},
    ),
    Case(
        apache("DEBUG", None, 'Completed request:{"isForwarded":false', RL),
        "rejected",
        {"reason": "malformed request-log entry", "target_table": "request_events"},
        "request",
    ),
    Case(
        apache("DEBUG", None, "Completed request:RequestHeader(apiKey=", RL),
        "rejected",
        {"reason": "malformed request-log entry", "target_table": "request_events"},
        "request",
    ),
    Case(apache("INFO", "Broker id=1", "x" * 200_000), "unused", {"reason": UNUSED}),
    Case("[" + "y" * 3_000_000, "rejected", {"reason": "no recognisable log4j layout"}),
]

ALL_LOG_CASES = [*STATE_CASES, *LAYOUT_CASES, *REQUEST_CASES, *OTHER_CASES]
