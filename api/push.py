"""Background push of new and resolved alerts to an Alertmanager (or any webhook taking its JSON list).

Runs as an asyncio task in the app's lifespan when ``PLANEWATCH_ALERTMANAGER_URL`` is set. Each round reads the
alerts snapshot (in a worker thread), plans with :func:`api.alertmanager.plan_push` and POSTs the alerts in
Alertmanager's postable shape. A failed POST leaves the remembered state as it was, so the same alerts are
retried next round; errors are logged, never raised out of the loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from api.alertmanager import plan_push, to_alertmanager
from api.incident_index import incident_index
from api.settings import Settings
from api.store import LakeStore, TableUnavailable
from schemas.tables import ALERTS

__all__ = ["AlertPusher", "push_url"]

log = logging.getLogger(__name__)

# Alerts per POST: Alertmanager accepts large lists, but a bounded body keeps one round's request small.
MAX_ALERTS_PER_POST = 500
# One POST may take this long before the round gives up (and retries next round).
POST_TIMEOUT_S = 5.0
_COLUMNS = [c for c in ALERTS.names if c != "evidence"]
_POSTABLE = ("labels", "annotations", "startsAt", "endsAt", "generatorURL")


def push_url(url: str) -> str:
    """An Alertmanager base URL gets ``/api/v2/alerts`` appended; a URL with a path is used as it is."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/api/v2/alerts"
    return url


class AlertPusher:
    """Pushes alert changes every ``push_interval_s`` and re-sends open alerts every ``resend_interval_s``."""

    def __init__(self, store: LakeStore, settings: Settings, client: httpx.AsyncClient | None = None) -> None:
        if not settings.alertmanager_url:
            raise ValueError("AlertPusher needs alertmanager_url")
        self.store = store
        self.settings = settings
        self.url = push_url(settings.alertmanager_url)
        self._client = client or httpx.AsyncClient(timeout=POST_TIMEOUT_S)
        self._known: dict[str, str] | None = None
        self._last_resend = 0.0
        self.pushed = 0  # alerts delivered so far (for tests and logs)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    async def run(self) -> None:
        """Loop until cancelled."""
        while True:
            try:
                await self.push_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # loop-level catch: one bad round must not stop paging
                log.exception("alert push round failed")
            await asyncio.sleep(self.settings.push_interval_s)

    async def push_once(self) -> int:
        """One round: returns how many alerts were delivered."""
        try:
            snap = await asyncio.to_thread(self.store.snapshot, ALERTS.name)
        except TableUnavailable as e:
            log.info("alert push skipped: %s", e)
            return 0
        index = await asyncio.to_thread(incident_index, self.store)
        rows: list[dict[str, Any]] = [{**r, "incident_id": (index or {}).get(r["alert_id"])}
                                      for r in snap.select(_COLUMNS).to_pylist()]
        if index is not None:
            # an open alert written a moment before its incident: pushed next round, with its incident's label
            # (pushed now without it, the label would come later and Alertmanager would page it twice)
            rows = [r for r in rows if r["incident_id"] is not None or r.get("status") != "open"]
        now_mono = time.monotonic()
        resend = now_mono - self._last_resend >= self.settings.resend_interval_s
        plan = plan_push(self._known, rows, resend_all_open=resend)
        if plan.send and not await self._post(plan.send):
            return 0
        self._known = plan.state
        if resend:
            self._last_resend = now_mono
        self.pushed += len(plan.send)
        return len(plan.send)

    async def _post(self, alerts: list[Mapping[str, Any]]) -> bool:
        now = datetime.now(UTC)
        resend = timedelta(seconds=self.settings.resend_interval_s)
        body = []
        for a in alerts:
            am = to_alertmanager(a, now=now, public_url=self.settings.public_url, resend_interval=resend)
            body.append({k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in am.items() if k in _POSTABLE})
        for i in range(0, len(body), MAX_ALERTS_PER_POST):
            try:
                r = await self._client.post(self.url, json=body[i : i + MAX_ALERTS_PER_POST])
            except httpx.HTTPError as e:
                log.warning("alert push to %s failed: %s", self.url, e)
                return False
            if r.status_code >= 300:
                log.warning("alert push to %s answered %s: %s", self.url, r.status_code, r.text[:200])
                return False
        return True
