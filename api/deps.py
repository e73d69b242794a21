"""Dependencies of the routes: settings, the lake store, the bearer-token guard, and one error helper."""

from __future__ import annotations

import hmac
from typing import Annotated, Any, NoReturn

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.settings import Settings, get_settings
from api.store import LakeStore

__all__ = ["SettingsDep", "StoreDep", "TokenGuard", "bad_param", "get_store", "require_token"]

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
