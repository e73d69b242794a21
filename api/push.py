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
from api.incident_index import incident_fields, incident_index
from api.roll_awareness import annotate
from api.settings import Settings
from api.store import LakeStore, TableUnavailable
from schemas.tables import ALERTS

__all__ = ["AlertPusher", "push_url"]

log = logging.getLogger(__name__)

# Alerts per POST: Alertmanager accepts large lists, but a bounded body keeps one round's request small.
MAX_ALERTS_PER_POST = 500
# An open alert waits this long for its incident before it is pushed without the incident's label: the alert
# writer writes the incident right after the alert (milliseconds), a push round comes every push_interval_s.
INCIDENT_WAIT_S = 30.0
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
        self._held: dict[str, float] = {}  # open alert id -> when it was first held back waiting for its incident
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
        rows: list[dict[str, Any]] = [{**r, **incident_fields(index, r["alert_id"])}
                                      for r in snap.select(_COLUMNS).to_pylist()]
        if index is not None:
            rows = self._hold_for_incidents(rows, time.monotonic())
        now_mono = time.monotonic()
        resend = now_mono - self._last_resend >= self.settings.resend_interval_s
        rows, quiet = await asyncio.to_thread(self._not_expected, rows, resend)
        plan = plan_push(self._known, rows, resend_all_open=resend)
        plan.state.update(quiet)
        if plan.send and not await self._post(plan.send):
            return 0
        self._known = plan.state
        if resend:
            self._last_resend = now_mono
        self.pushed += len(plan.send)
        return len(plan.send)

    def _not_expected(self, rows: list[dict[str, Any]], resend: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The rows to plan, without the alerts a roll in progress explains (api.roll_awareness: recorded as
        `expected: rolling restart`, not paged), and the state to remember of expected alerts already resolved (never
        pushed, never judged again). Only the rows this round could send are judged; an expected alert still open is
        judged again every round, and pages once it outlasts its roll's recovery bound."""
        known = self._known
        judged = [r for r in rows if (known is None and r.get("status") == "open")
                  or (known is not None and (known.get(str(r["alert_id"])) != r.get("status")
                                             or (resend and r.get("status") == "open")))]
        if not judged:
            return rows, {}
        try:
            marks = {str(a["alert_id"]): a for a in annotate(self.store, judged, datetime.now(UTC))}
        except TableUnavailable as e:  # rolls unknown: page as if none were on
            log.warning("alerts pushed without roll awareness: %s", e)
            return rows, {}
        quiet: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        for r in rows:
            mark = marks.get(str(r["alert_id"]))
            if mark is None or mark["expected"] is None or (known or {}).get(str(r["alert_id"])) == "open":
                out.append(r)
                continue
            log.info("alert %s (%s) not paged: %s", r["alert_id"], r["type"], mark["roll_note"])
            if r.get("status") != "open":
                quiet[str(r["alert_id"])] = str(r.get("status"))
        return out, quiet

    def _hold_for_incidents(self, rows: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        """The rows to push now: an open alert written a moment before its incident waits for it (pushed without
        its label, the label would come later and Alertmanager would page it twice), at most INCIDENT_WAIT_S; then
        it goes without the label (logged): a page late by seconds beats none when incidents are not written."""
        out: list[dict[str, Any]] = []
        waiting: dict[str, float] = {}
        for r in rows:
            aid = str(r["alert_id"])
            if r["incident_id"] is not None or r.get("status") != "open":
                out.append(r)
                continue
            since = self._held.get(aid, now)
            if now - since < INCIDENT_WAIT_S:
                waiting[aid] = since
                continue
            log.warning("alert %s pushed without its incident: none written after %.0f s", aid, now - since)
            out.append(r)
        self._held = waiting
        return out

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
