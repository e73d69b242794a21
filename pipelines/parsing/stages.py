"""Small constants and lookups the log and metric parsers share (API names, record and timestamp limits)."""

from __future__ import annotations

from pipelines.parsing import patterns as P
from schemas.tables import QUARANTINE_RECORD_CHARS

__all__ = ["API_BY_KEY", "API_ID", "MAX_EPOCH_MS", "QUARANTINE_RECORD_CHARS", "REQUEST_PREFIX"]

REQUEST_PREFIX = "Completed request:"
# Epoch milliseconds accepted as a metric timestamp: years 1970..9999 (the range a Delta timestamp holds).
MAX_EPOCH_MS = 253402300799999

# ApiKeys spellings normalised: key = lower-case without `_`/space (LEADER_AND_ISR, "update metadata", LeaderAndIsr).
API_BY_KEY: dict[str, str] = {name.lower(): name for name in P.API_KEYS.values()}
API_ID: dict[str, int] = {name: k for k, name in P.API_KEYS.items()}
