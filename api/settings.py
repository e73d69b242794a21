"""Service settings, from the environment (prefix ``PLANEWATCH_``) through pydantic-settings.

Provided to routes by :func:`get_settings` (cached, injected with ``Depends``) so tests override it through
``app.dependency_overrides[get_settings]``; nothing is read at import time.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "get_settings"]


class Settings(BaseSettings):
    """Everything the service can be told; each field maps to ``PLANEWATCH_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PLANEWATCH_", env_ignore_empty=True, extra="ignore")

    lake: str = Field(default="var/lake", description="lake directory or object store URI (s3://bucket/prefix, "
                      "the endpoint and keys from AWS_* variables): one Delta table per sub-directory")
    cluster_dir: Path | None = Field(default=None, description="a reference cluster's directory (holds cluster.json)")
    admin_clusters: Path | None = Field(
        default=None, description="YAML file of Admin API connections per cluster (api.kafka_admin): the "
        "roll-safety verdict's per-partition and quorum checks")
    api_token: str | None = Field(default=None, description="bearer token for every data endpoint; unset = open")
    alertmanager_url: str | None = Field(
        default=None,
        description="Alertmanager base URL (alerts POSTed to <url>/api/v2/alerts) or a webhook URL used as-is",
    )
    public_url: str = Field(default="http://127.0.0.1:8080", description="how users reach this service (generatorURL)")
    # How often a request may check whether a table's Delta version moved. Checking costs a log listing (~1-7 ms);
    # once per 500 ms keeps that off the hot path while data is at most half a second behind the lake.
    refresh_interval_ms: int = Field(default=500, ge=0, le=60_000)
    # Reload a moved snapshot (alerts, control requests) off the request path, serving the previous version meanwhile.
    background_reload: bool = Field(default=True)
    # A table whose newest commit is older than this is "not keeping up" in /health.
    stale_after_s: float = Field(default=300.0, gt=0)
    # Wall-clock cap of one DataFusion query; past it the request answers 503 (the query is abandoned).
    query_timeout_s: float = Field(default=10.0, gt=0, le=300)
    # Alertmanager: push interval for changes, and the resend interval for still-firing alerts (Alertmanager
    # resolves an alert it has not heard of for resolve_timeout, 5 min by default; Prometheus resends every 1 min).
    push_interval_s: float = Field(default=5.0, gt=0)
    resend_interval_s: float = Field(default=60.0, gt=0)

    @field_validator("lake", mode="before")
    @classmethod
    def _lake_text(cls, v: object) -> object:
        return str(v) if isinstance(v, Path) else v  # a directory given as a Path

    @field_validator("api_token")
    @classmethod
    def _strip_token(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        return v or None


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()
