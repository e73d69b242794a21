"""benchmarks.fleet.LakeWatch: when each alert was first readable and raw_logs' rows over time, read apart from the
producing loop, each table brought up to date with its new commits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from benchmarks.fleet import LakeWatch
from benchmarks.fleet_load import INCIDENT_S, Incident
from lake.tables import ensure_table
from schemas.tables import ALERTS, RAW_LOGS, Table

T0 = dt.datetime(2026, 12, 7, 18, 0, tzinfo=dt.UTC)


def _append(lake: Path, table: Table, rows: list[dict[str, Any]]) -> None:
    full = [{**dict.fromkeys(table.names), **row} for row in rows]
    write_deltalake(str(lake / table.name), pa.Table.from_pylist(full, schema=table.to_arrow()), mode="append",
                    partition_by=list(table.partition_by) or None)


def _alert(broker: int, started: dt.datetime, kind: str = "DELAYED_LEADER_AND_ISR") -> dict[str, Any]:
    return {"alert_id": f"{kind}-{broker}-{started.timestamp()}", "type": kind, "cluster": "c001",
            "broker_id": broker, "started_at": started}


def _lines(n: int) -> list[dict[str, Any]]:
    return [{"cluster": "c001", "line": f"line {i}", "source": "kafka:fleet/0", "source_offset": i, "date": T0.date()}
            for i in range(n)]


def test_alerts_first_readable_and_raw_rows_over_polls(tmp_path: Path) -> None:
    watch = LakeWatch(str(tmp_path))
    watch.poll()  # no tables yet: nothing seen, no rows
    assert watch.raw == [(watch.raw[0][0], 0)]
    for table in (ALERTS, RAW_LOGS):
        ensure_table(str(tmp_path / table.name), table)
    _append(tmp_path, RAW_LOGS, _lines(30))
    _append(tmp_path, ALERTS, [_alert(7, T0), _alert(8, T0, "STALE_CONTROLLER_EPOCH")])
    watch.poll()
    first = watch.alert_seen("c001", 7, T0.timestamp() + 10)
    assert first is not None
    assert watch.alert_seen("c001", 8, T0.timestamp()) is None  # another type
    assert watch.alert_seen("c001", 7, T0.timestamp() + 60) is None  # started too far from the request
    _append(tmp_path, RAW_LOGS, _lines(20))
    _append(tmp_path, ALERTS, [_alert(9, T0)])
    watch.poll()
    assert watch.alert_seen("c001", 7, T0.timestamp()) == first  # the first time, not the last
    assert watch.alert_seen("c001", 9, T0.timestamp()) is not None
    assert [n for _, n in watch.raw] == [0, 30, 50]
    assert watch.raw_reached(40, 0.0) == watch.raw[2][0]
    assert watch.raw_reached(60, 0.0) is None
    watch.check()
    explained = [Incident("c001", 7, 0, T0.timestamp() + INCIDENT_S)]
    assert watch.unexplained(explained, 0.0) == [("c001", 9, T0.timestamp())]  # broker 9's: no incident of its own
    assert watch.unexplained(explained, T0.timestamp() + 1) == []  # started before the phase
