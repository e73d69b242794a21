"""A minimal Chrome DevTools Protocol client for the dashboard's browser test: headless Debian chromium, one page,
JSON messages over a WebSocket (RFC 6455 client framing written here; no extra package needed)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1400,1300",
]
START_TIMEOUT_S = 30.0


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """A headless chromium process; `close()` kills it (and its children, via the process group)."""

    def __init__(self, user_data_dir: Path) -> None:
        exe = chromium_path()
        if exe is None:
            raise RuntimeError("chromium is not installed (scripts/bootstrap.sh installs it)")
        self.proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self.proc.stderr is not None
        self.port = 0
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            self.close()
            raise RuntimeError("chromium did not open its DevTools port")

    def page_ws(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
            targets = json.loads(r.read())
        url: str = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        return url

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


class Page:
    """One DevTools page session: send commands, collect events (console, exceptions, log entries)."""

    def __init__(self, ws_url: str) -> None:
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", ws_url)
        assert m, ws_url
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("websocket handshake failed")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise RuntimeError(status.decode(errors="replace"))
        self.buf = rest
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _send_frame(self, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _recv_message(self) -> dict[str, Any]:
        data = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode in (0x1, 0x0, 0x2):
                data += payload
                if b0 & 0x80:
                    msg: dict[str, Any] = json.loads(data)
                    return msg
            elif opcode == 0x8:
                raise RuntimeError("websocket closed by the browser")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        self._send_frame(json.dumps({"id": my_id, "method": method, "params": params}).encode())
        while True:
            msg = self._recv_message()
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r.get("result", {}).get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (network failures included) seen so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + json.dumps(p.get("args", []))[:500])
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
        return out

    def close(self) -> None:
        self.sock.close()
