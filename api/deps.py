"""What every route shares: settings, the lake store, the bearer-token guard, the query-parameter rules (name
patterns, id and page bounds, time normalisation) and the 422 helper."""

from __future__ import annotations

import hmac
from datetime import UTC, datetime
from typing import Annotated, Any, NoReturn

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.settings import Settings, get_settings
from api.store import LakeStore

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_BROKER_ID",
    "MAX_LIMIT",
    "MAX_TIME",
    "MIN_TIME",
    "NAME_PATTERN",
    "SettingsDep",
    "StoreDep",
    "TokenGuard",
    "bad_param",
    "get_store",
    "require_token",
    "utc",
]

SettingsDep = Annotated[Settings, Depends(get_settings)]

# auto_error=False: a missing header is our 401 (with WWW-Authenticate), not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="PLANEWATCH_API_TOKEN, when the service has one")


def get_store(request: Request) -> LakeStore:
    """The process's LakeStore (created in the app's lifespan)."""
    store: LakeStore = request.app.state.store
    return store


StoreDep = Annotated[LakeStore, Depends(get_store)]


def require_token(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Refuse the request (401) unless it carries the configured bearer token; open when none is configured."""
    expected = settings.api_token
    if expected is None:
        return
    given = credentials.credentials if credentials is not None else ""
    # Constant-time comparison of bytes: the time taken does not tell how much of the token was right.
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            status_code=401,
            detail="missing or wrong bearer token" if given else "missing bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )


TokenGuard = Depends(require_token)


def bad_param(field: str, msg: str, value: Any = None, where: str = "query") -> NoReturn:
    """Raise a 422 shaped like FastAPI's own validation errors, naming the field."""
    raise HTTPException(
        status_code=422,
        detail=[{"type": "value_error", "loc": [where, field], "msg": msg, "input": value}],
    )


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
    try:
        t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+00:01 is year 0 in UTC, out of datetime's range
        bad_param(field, f"must lie between {MIN_TIME.date()} and {MAX_TIME.date()}", t.isoformat())
    if not MIN_TIME <= t < MAX_TIME:
        bad_param(field, f"must lie between {MIN_TIME.date()} and {MAX_TIME.date()}", t.isoformat())
    return t
