"""A pager's stand-in: an HTTP receiver on 127.0.0.1 for Alertmanager's webhook notifications, recording each alert
notified with the time it arrived (a page), as a context manager that stops its server whatever happens."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Pager"]

# The receiver thread stops within this long once asked.
STOP_TIMEOUT_S = 5.0


class Pager:
    """Records every alert of every webhook notification: :meth:`pages` gives (type, cluster, broker id, alert id,
    arrival time, delay from the alert's startsAt)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._got: list[tuple[float, dict[str, Any]]] = []
        got, lock = self._got, self._lock

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    got.extend((time.time(), a) for a in body.get("alerts", []))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="pager", daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/page"

    def __enter__(self) -> Pager:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_S)

    def pages(self) -> list[dict[str, Any]]:
        """Every alert notified so far, in arrival order."""
        with self._lock:
            got = list(self._got)
        out = []
        for at, a in got:
            labels = a.get("labels", {})
            starts = datetime.fromisoformat(str(a.get("startsAt")).replace("Z", "+00:00")).timestamp()
            out.append({"type": labels.get("alertname"), "cluster": labels.get("cluster"),
                        "broker_id": labels.get("broker_id"), "alert_id": a.get("annotations", {}).get("alert_id"),
                        "at": at, "delay_s": at - starts})
        return out
