"""The dashboard's panels: one SQL file each under api/sql/, the same files `planewatch sql --file` runs."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from api.store import QUERY_TABLES

__all__ = ["SQL_DIR", "Panel", "panel_sql", "tables_in"]

SQL_DIR = Path(__file__).resolve().parent / "sql"


class Panel(StrEnum):
    """The panels (file names without .sql)."""

    leader_and_isr_latency = "leader_and_isr_latency"
    queue_sizes = "queue_sizes"
    idle_percents = "idle_percents"
    acceptor_blocked = "acceptor_blocked"
    open_alerts = "open_alerts"
    open_incidents = "open_incidents"


def panel_sql(panel: Panel) -> str:
    """The SQL text of a panel (read from the repository, never from a request)."""
    return (SQL_DIR / f"{panel.value}.sql").read_text()


def tables_in(sql: str) -> list[str]:
    """The lake tables a query mentions (to register them by name)."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    return [t for t in QUERY_TABLES if t in words]
