"""Polls the demo's API for alerts and remembers when each one first became readable there."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from typing import Any

from planewatch.demo.plan import SeenAlert

__all__ = ["AlertWatcher"]

# How often GET /alerts is polled: the resolution of the measured detection delay (a fraction of the delays measured,
# a few requests a second for the API).
POLL_S = 0.25
# Page size and page bound per poll (the demo produces tens of alerts, not thousands).
PAGE_LIMIT = 1000
MAX_PAGES = 20
# Incidents read for the demo's table: its runs raise tens; the API caps a page at 1,000.
INCIDENT_LIMIT = 1000
HTTP_TIMEOUT_S = 5.0


class AlertWatcher:
    """A background thread that reads every page of GET /alerts each second (bearer token), keeping first-seen times."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._seen: dict[str, SeenAlert] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-alert-watcher", daemon=True)
        self.last_error: str | None = None
        self.polls = 0  # full reads of GET /alerts attempted
        self.failures: Counter[str] = Counter()  # failed reads by error ("HTTP 503", "URLError: ...")

    def start(self) -> AlertWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(HTTP_TIMEOUT_S * 2)

    def alerts(self) -> list[SeenAlert]:
        """Every alert seen so far, with the time it was first seen."""
        with self._lock:
            return list(self._seen.values())

    def refresh(self) -> bool:
        """One full read of GET /alerts now, in the caller's thread (what the API serves from here on is in
        :meth:`alerts`); False when the read failed (the background thread reads again within a second)."""
        try:
            self.poll_once()
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return True

    def poll_once(self) -> None:
        """One full read of GET /alerts (all pages)."""
        now_ms = int(time.time() * 1000)
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            query = {"limit": str(PAGE_LIMIT)} | ({"cursor": cursor} if cursor else {})
            page = self._get("/alerts?" + urllib.parse.urlencode(query))
            with self._lock:
                for row in page.get("data", []):
                    if row["alert_id"] not in self._seen:
                        self._seen[row["alert_id"]] = SeenAlert.from_api(row, now_ms)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def incidents(self) -> list[dict[str, Any]]:
        """The incidents GET /incidents returns (the newest INCIDENT_LIMIT); [] when the API cannot say."""
        try:
            page = self._get("/incidents?" + urllib.parse.urlencode({"limit": str(INCIDENT_LIMIT)}))
        except (urllib.error.URLError, OSError, ValueError):
            return []
        return list(page.get("data", []))

    def causes(self, incidents: list[dict[str, Any]] | None = None) -> dict[str, str]:
        """alert id -> the cause of the incident it belongs to (`incidents`, default: read now)."""
        rows = self.incidents() if incidents is None else incidents
        return {aid: str(inc["cause"]) for inc in rows for aid in inc.get("alert_ids", [])}

    def _get(self, path: str) -> dict[str, Any]:
        req = urllib.request.Request(self.base_url + path, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as r:
            body: dict[str, Any] = json.loads(r.read())
            return body

    def _run(self) -> None:
        while not self._stop.is_set():
            self.polls += 1
            try:
                self.poll_once()
                self.last_error = None
            except urllib.error.HTTPError as e:
                self.last_error = f"HTTP {e.code}"
            except (urllib.error.URLError, OSError, ValueError) as e:
                self.last_error = f"{type(e).__name__}: {e}"
            if self.last_error is not None:
                self.failures[self.last_error] += 1
            self._stop.wait(POLL_S)
