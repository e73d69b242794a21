"""Query-parameter rules every route shares: name patterns, id and page bounds, and time normalisation."""

from __future__ import annotations

from datetime import UTC, datetime

from api.deps import bad_param

__all__ = ["DEFAULT_LIMIT", "MAX_BROKER_ID", "MAX_LIMIT", "MAX_TIME", "MIN_TIME", "NAME_PATTERN", "utc"]

# Page size: default 100; larger requests are capped at MAX_LIMIT (one page stays well under a megabyte).
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Cluster names as Kafka and our pipeline spell them.
NAME_PATTERN = r"^[A-Za-z0-9_.:\-]{1,200}$"
# Kafka's broker.id is a Java int.
MAX_BROKER_ID = 2**31 - 1

# Times a query may name: Kafka did not exist before 2011, and DataFusion's nanosecond timestamps end in 2262.
MIN_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2200, 1, 1, tzinfo=UTC)


def utc(t: datetime | None, field: str = "time") -> datetime | None:
    """A timezone-aware UTC datetime (naive input is taken as UTC); 422 naming `field` outside 2000..2200."""
    if t is None:
        return None
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    if not MIN_TIME <= t < MAX_TIME:
        bad_param(field, f"must lie between {MIN_TIME.date()} and {MAX_TIME.date()}", t.isoformat())
    return t
