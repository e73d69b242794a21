"""What the API shows of filesystem paths: relative to the lake, or the last few parts; never an absolute path.

Error texts from delta-rs, DataFusion and the object store name the files they failed on by absolute path (with
or without the leading slash, or as ``file://`` URIs), and alert evidence names the log file a line came from
(``source``, written by detection). An absolute path tells a client the host's layout (user names, mount points)
and nothing it can act on, so everything the API answers passes through `scrub_text` / `scrub_value`:

* a path under the lake becomes relative to it (``alerts/part-0001.parquet``), the lake itself ``<lake>``;
* any other absolute path keeps its last `PATH_TAIL_PARTS` parts (``broker-1/logs/kafka-request.log``).

Pure string logic; the lake is the service's setting.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

__all__ = ["PATH_TAIL_PARTS", "scrub_text", "scrub_value"]

# Parts of a path outside the lake that are shown: a broker's directory, its logs directory and the file tell
# which log a line came from; the alert's cluster and broker columns say the rest.
PATH_TAIL_PARTS = 3
# Characters that end a path inside a message (quotes, separators, brackets, whitespace).
_END = r"""\s'"`,;()\[\]{}<>"""
# An absolute path not glued to a word, a dot or another path: "/x/y", "file:///x/y".
_ABSOLUTE = re.compile(rf"(?<![\w.~:/\-])(?:file://)?/[^{_END}]+")
# Nesting walked in evidence at most (evidence is a few levels of JSON; anything deeper is shown as scrubbed text).
MAX_DEPTH = 20


@lru_cache(maxsize=8)
def _lake_pattern(lake: str) -> re.Pattern[str]:
    """The lake's root in every spelling a message uses: absolute, resolved, without the leading slash, as a URI."""
    roots = {os.path.abspath(lake), os.path.realpath(lake)}
    spelled = sorted({r.rstrip("/").lstrip("/") for r in roots if r.strip("/")}, key=len, reverse=True)
    alternatives = "|".join(re.escape(r) for r in spelled)
    return re.compile(rf"(?<![\w.~:/\-])(?:file://)?/?(?:{alternatives})(?:/(?P<rest>[^{_END}]*)|(?=\.?(?:[{_END}:]|$)))")


def _tail(path: str) -> str:
    parts = [p for p in path.removeprefix("file://").split("/") if p]
    return "/".join(parts[-PATH_TAIL_PARTS:]) if parts else path


def scrub_text(text: str, lake: str) -> str:
    """`text` with every absolute path replaced (see the module docstring)."""
    if "/" not in text:
        return text
    if lake.strip("/"):
        text = _lake_pattern(lake).sub(lambda m: m.group("rest") or "<lake>", text)
    return _ABSOLUTE.sub(lambda m: _tail(m.group(0)), text)


def scrub_value(value: Any, lake: str, _depth: int = 0) -> Any:
    """`value` (parsed JSON: dicts, lists, strings, numbers) with `scrub_text` applied to every string in it."""
    if isinstance(value, str):
        return scrub_text(value, lake)
    if _depth >= MAX_DEPTH:
        return scrub_text(json.dumps(value, default=str), lake)
    if isinstance(value, dict):
        return {k: scrub_value(v, lake, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, lake, _depth + 1) for v in value]
    return value
