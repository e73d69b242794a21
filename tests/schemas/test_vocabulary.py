"""The contract vocabulary (schemas.signals, events, alerts, inputs) is complete, and every layer that must spell its
names as text (the dashboard's SQL files and page) names only known ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.parsing.patterns import EVENTS
from schemas.alerts import AlertStatus, AlertType, Severity
from schemas.events import ControlRequest, Event, LatencyStatus
from schemas.inputs import LogKind, MetricFormat
from schemas.signals import SOURCES, Signal

ROOT = Path(__file__).resolve().parents[2]
SQL_FILES = sorted((ROOT / "api" / "sql").glob("*.sql"))
DASHBOARD = ROOT / "api" / "static" / "dashboard.html"

# The names a column of the lake may be compared with in SQL.
VOCABULARY: dict[str, frozenset[str]] = {
    "signal": frozenset(Signal),
    "type": frozenset(AlertType),
    "event": frozenset(Event),
    "request": frozenset(ControlRequest),
    "api_name": frozenset(ControlRequest),
    "status": frozenset(AlertStatus) | frozenset(LatencyStatus),
    "severity": frozenset(Severity),
    "log_kind": frozenset(LogKind),
    "metric_format": frozenset(MetricFormat),
}
_LITERAL = r"'(?:[^']|'')*'"
_COMPARISON = re.compile(rf"""(?P<col>"?[A-Za-z_][A-Za-z0-9_]*"?)\s*(?:=|<>|!=|\bIN\b)\s*"""
                         rf"""(?P<values>\(\s*{_LITERAL}(?:\s*,\s*{_LITERAL})*\s*\)|{_LITERAL})""", re.IGNORECASE)
_INTERVAL = re.compile(rf"\bINTERVAL\s+{_LITERAL}", re.IGNORECASE)


def sql_names(sql: str) -> list[tuple[str, str]]:
    """(column, literal) of every comparison of a column with string literals. Raises AssertionError on a literal
    that is neither in such a comparison nor an INTERVAL, so no name escapes the check."""
    text = re.sub(r"--[^\n]*", "", sql)
    found: list[tuple[str, str]] = []
    for m in _COMPARISON.finditer(text):
        col = m.group("col").strip('"').lower()
        found += [(col, v[1:-1].replace("''", "'")) for v in re.findall(_LITERAL, m.group("values"))]
    rest = _INTERVAL.sub("", _COMPARISON.sub("", text))
    stray = re.findall(_LITERAL, rest)
    assert not stray, f"string literals outside a column comparison: {stray}"
    return found


def unknown_sql_names(sql: str) -> list[str]:
    """The literals a query compares with a vocabulary column that the vocabulary does not know."""
    bad = []
    for col, value in sql_names(sql):
        if col not in VOCABULARY:
            bad.append(f"{col} = {value!r}: column without a vocabulary in this test")
        elif value not in VOCABULARY[col]:
            bad.append(f"{col} = {value!r}: not a known {col}")
    return bad


def dashboard_signal_groups(html: str) -> dict[str, list[str]]:
    """The page's `const SIGNALS = {group: [names]}`."""
    block = re.search(r"const SIGNALS = \{(.*?)\};", html, re.DOTALL)
    assert block, "dashboard.html declares no SIGNALS"
    return {g: re.findall(r'"([^"]*)"', names) for g, names in re.findall(r"(\w+):\s*\[([^\]]*)\]", block.group(1))}


def dashboard_panels(html: str) -> dict[str, str]:
    """The page's `const PANEL = {group: sql file name}`."""
    block = re.search(r"const PANEL = \{(.*?)\};", html, re.DOTALL)
    assert block, "dashboard.html declares no PANEL"
    return dict(re.findall(r'(\w+):\s*"([^"]*)"', block.group(1)))


def unknown_dashboard_names(html: str) -> list[str]:
    """Signals of the page's SIGNALS and alert-type-like string literals of its script that are not known names."""
    bad = [f"signal {s!r}" for names in dashboard_signal_groups(html).values() for s in names if s not in set(Signal)]
    script = "".join(re.findall(r"<script>(.*?)</script>", html, re.DOTALL))
    for lit in re.findall(r"""["'`]([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)["'`]""", script):
        if lit not in set(AlertType):
            bad.append(f"alert type {lit!r}")
    return bad


def test_every_signal_has_its_kafka_metric():
    assert list(SOURCES) == list(Signal)
    assert all(src.unit and src.meaning for src in SOURCES.values())


def test_the_message_patterns_produce_every_event_and_no_other():
    assert set(EVENTS) == set(Event)


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.name)
def test_sql_files_name_only_known_names(path: Path):
    assert unknown_sql_names(path.read_text()) == []


def test_dashboard_names_only_known_signals_and_alert_types():
    assert unknown_dashboard_names(DASHBOARD.read_text(encoding="utf-8")) == []


def test_dashboard_charts_the_signals_its_panels_select():
    html = DASHBOARD.read_text(encoding="utf-8")
    groups, panels = dashboard_signal_groups(html), dashboard_panels(html)
    assert set(groups) == set(panels)
    for group, panel in panels.items():
        selected = {v for col, v in sql_names((ROOT / "api" / "sql" / f"{panel}.sql").read_text()) if col == "signal"}
        assert selected == set(groups[group]), group


def test_the_checks_catch_unknown_names():
    assert unknown_sql_names("SELECT * FROM metric_rollups_1m WHERE signal IN ('RequestQueueSize', 'Bogus')") == [
        "signal = 'Bogus': not a known signal"]
    assert unknown_sql_names("SELECT * FROM alerts WHERE \"type\" = 'NOT_A_TYPE'") == [
        "type = 'NOT_A_TYPE': not a known type"]
    with pytest.raises(AssertionError, match="outside a column comparison"):
        sql_names("SELECT * FROM m WHERE signal LIKE 'Request%'")
    page = ('<script>const SIGNALS = {\n  q: ["RequestQueueSize", "Bogus"],\n};\n'
            'if (a.type === "NO_SUCH_ALERT") x();</script>')
    assert unknown_dashboard_names(page) == ["signal 'Bogus'", "alert type 'NO_SUCH_ALERT'"]
