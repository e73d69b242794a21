"""broker/log4j.py: Kafka's layout, level names, routing to the four files, rolling, and the 2.8 request-log JSON."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from broker import log4j

# FACTS.md 1.1: `[%d] %p %m (%c)%n` with %d = 2020-03-26 11:38:33,075
LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) \(([^()]+)\)$")


def test_timestamp_is_log4j_iso8601() -> None:
    ts = time.mktime((2020, 3, 26, 11, 38, 33, 0, 0, -1)) + 0.075
    assert log4j.format_timestamp(ts) == "2020-03-26 11:38:33,075"


def test_routes_levels_and_layout(tmp_path: Path) -> None:
    ctx = log4j.Log4j().configure(tmp_path, controller_log=True)
    try:
        sc = ctx.get_logger(log4j.STATE_CHANGE_LOGGER, "[Broker id=1] ")
        sc.info("Handling LeaderAndIsr request correlationId 4 from controller 0 for 1 partitions")
        sc.trace("dropped at INFO")
        ctx.get_logger("kafka.server.KafkaApis", "[KafkaApi-1] ").warn("something odd")
        ctx.get_logger("kafka.server.KafkaApis").debug("dropped at INFO")
        ctx.get_logger(log4j.REQUEST_LOGGER).debug("Completed request:{}")
        ctx.get_logger("kafka.controller.KafkaController").trace("controller trace")
        ctx.flush()
        state = (tmp_path / "state-change.log").read_text().splitlines()
        server = (tmp_path / "server.log").read_text().splitlines()
        request = (tmp_path / "kafka-request.log").read_text().splitlines()
        controller = (tmp_path / "controller.log").read_text().splitlines()
    finally:
        ctx.close()
    assert len(state) == 1
    m = LINE.match(state[0])
    assert m is not None
    assert m.group(2, 3, 4) == (
        "INFO", "[Broker id=1] Handling LeaderAndIsr request correlationId 4 from controller 0 for 1 partitions",
        "state.change.logger")
    # additivity=false: state-change and request lines do not reach server.log
    assert [LINE.match(x).group(2, 3, 4) for x in server] == [  # type: ignore[union-attr]
        ("WARN", "[KafkaApi-1] something odd", "kafka.server.KafkaApis")]
    assert [LINE.match(x).group(2, 4) for x in request] == [("DEBUG", "kafka.request.logger")]  # type: ignore[union-attr]
    assert [LINE.match(x).group(2, 3) for x in controller] == [("TRACE", "controller trace")]  # type: ignore[union-attr]


def test_private_hierarchy_leaves_python_logging_alone(tmp_path: Path) -> None:
    ctx = log4j.Log4j().configure(tmp_path)
    try:
        logging.getLogger("kafka.conn").warning("kafka-python's own logger")
        ctx.flush()
        assert (tmp_path / "server.log").read_text() == ""
        assert logging.getLevelName(logging.WARNING) == "WARNING"
    finally:
        ctx.close()


def test_trace_level_for_state_change(tmp_path: Path) -> None:
    ctx = log4j.Log4j().configure(tmp_path, state_change_level="TRACE")
    try:
        lg = ctx.get_logger(log4j.STATE_CHANGE_LOGGER)
        assert lg.is_trace_enabled()
        lg.trace("per partition")
        ctx.flush()
        text = (tmp_path / "state-change.log").read_text()
        assert text.split("] ", 1)[1] == "TRACE per partition (state.change.logger)\n"
    finally:
        ctx.close()


def test_bad_level_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown log4j level 'LOUD'"):
        log4j.Log4j().configure(tmp_path, root_level="LOUD")


def _record(name: str, msg: str, created: float) -> logging.LogRecord:
    rec = logging.makeLogRecord({"name": name, "msg": msg, "levelno": log4j.INFO, "levelname": "INFO"})
    rec.created = created
    return rec


def test_hourly_rolling_names_the_ended_hour(tmp_path: Path) -> None:
    path = tmp_path / "state-change.log"
    handler = log4j.DailyRollingFileHandler(path)
    handler.setFormatter(log4j.Log4jFormatter())
    try:
        t0 = time.mktime((2024, 5, 10, 9, 59, 59, 0, 0, -1))
        handler._period = "2024-05-10-09"  # the file was created in the 09 hour
        handler.emit(_record("state.change.logger", "first", t0))
        handler.emit(_record("state.change.logger", "second", t0 + 2))  # 10:00:01
        handler.flush()
    finally:
        handler.close()
    rolled = tmp_path / "state-change.log.2024-05-10-09"
    assert rolled.read_text().startswith("[2024-05-10 09:59:59,000] INFO first (state.change.logger)")
    assert path.read_text() == "[2024-05-10 10:00:01,000] INFO second (state.change.logger)\n"


def test_size_rolling(tmp_path: Path) -> None:
    ctx = log4j.Log4j().configure(tmp_path, roll="size", max_file_bytes=300, max_backup_index=2)
    try:
        lg = ctx.get_logger("kafka.server.KafkaServer")
        for i in range(30):
            lg.info(f"line {i:03d} " + "x" * 40)
        ctx.flush()
    finally:
        ctx.close()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("server.log"))
    assert names == ["server.log", "server.log.1", "server.log.2"]
    assert all(p.stat().st_size <= 300 for p in tmp_path.iterdir() if p.name.startswith("server.log"))
    assert "line 029" in (tmp_path / "server.log").read_text()
