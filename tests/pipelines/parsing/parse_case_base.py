"""The shared pieces of the log parser cases (parse_cases.py and its parts): the Case record, the Apache-layout
line builder and the constants the cases share."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

SC = "state.change.logger"
TS = "2021-03-02 08:00:01,010"
TS_DT = dt.datetime(2021, 3, 2, 8, 0, 1, 10000, tzinfo=dt.UTC)
RAW_BROKER = 9  # the broker id the path gives (lines without [Broker id=N] keep it)


@dataclass
class Case:
    line: str
    route: str
    expect: dict[str, Any] = field(default_factory=dict)
    log_kind: str = "state-change"


def apache(level: str, ident: str | None, msg: str, logger: str = SC, ts: str = TS) -> str:
    return f"[{ts}] {level} " + (f"[{ident}] " if ident else "") + f"{msg} ({logger})"


def st(level: str, ident: str | None, msg: str, logger: str = SC, broker: int | None = None, **expect: Any) -> Case:
    """A state_change case in the Apache layout; `expect` lists every non-null silver column beyond the layout's."""
    row = {"ts": TS_DT, "level": level, "logger": logger, "message": msg, "broker_id": broker, **expect}
    return Case(apache(level, ident, msg, logger), "state_change", row)


LAI = {"request": "LeaderAndIsr"}
UM = {"request": "UpdateMetadata"}
SR = {"request": "StopReplica"}
B1 = {"broker": 1, "role": "broker"}
OLD = {"kafka_format": "2.2-2.5"}
P4 = {"topic": "orders", "partition": 4, "partitions": 1}
STATE_22 = (
    "PartitionState(controllerEpoch=7, leader=2, leaderEpoch=12, isr=2,3, zkVersion=31, replicas=1,2,3, isNew=false)"
)
STATE_24 = (
    "LeaderAndIsrPartitionState(topicName='orders', partitionIndex=4, controllerEpoch=7, leader=2, "
    "leaderEpoch=12, isr=[2, 3], zkVersion=31, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[], "
    "isNew=false)"
)
UM_STATE = (
    "PartitionState(controllerEpoch=7, leader=2, leaderEpoch=12, isr=[2, 3], zkVersion=31, replicas=[1, 2, 3], "
    "offlineReplicas=[])"
)
# 2.4+ generated toString (real 2.4-3.x logs at TRACE: `Cached leader info UpdateMetadataPartitionState(...)`)
UM_STATE_24 = (
    "UpdateMetadataPartitionState(topicName='orders', partitionIndex=4, controllerEpoch=7, leader=2, leaderEpoch=12, "
    "isr=[2, 3], zkVersion=31, replicas=[1, 2, 3], offlineReplicas=[])"
)
C44 = {"correlation_id": 44, "controller_id": 1, "controller_epoch": 7}
