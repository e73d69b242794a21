"""GET /runbook/{alert_type}: what an alert type means, what it reads, when it fires and what to do, as
docs/alerts.md says it (the Alertmanager push's ``runbook_url`` points here). Open like /docs: it serves the
documentation, no data."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from schemas.alerts import AlertType

__all__ = ["ALERTS_DOC", "router", "runbook_text"]

router = APIRouter(include_in_schema=False)

ALERTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"
_SECTION = re.compile(r"^## (?P<name>[A-Z_]+)\s*$", re.MULTILINE)


@lru_cache(maxsize=1)
def _sections(doc: Path) -> dict[str, str]:
    """Each `## ALERT_TYPE` section of the alerts document, heading included."""
    text = doc.read_text(encoding="utf-8")
    heads = list(_SECTION.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return {h["name"]: text[h.start():end].strip() + "\n" for h, end in zip(heads, ends, strict=True)}


def runbook_text(alert_type: str, doc: Path = ALERTS_DOC) -> str | None:
    """The runbook of `alert_type` (Markdown), None when the document has no section for it."""
    return _sections(doc).get(alert_type) if doc.is_file() else None


@router.get("/runbook/{alert_type}", response_class=PlainTextResponse)
def runbook(alert_type: str) -> PlainTextResponse:
    """The alert type's section of docs/alerts.md, as Markdown text."""
    if alert_type not in AlertType.__members__:
        raise HTTPException(404, f"no alert type {alert_type!r}")
    text = runbook_text(alert_type)
    if text is None:
        raise HTTPException(404, f"no runbook for {alert_type}: docs/alerts.md is not beside this service")
    return PlainTextResponse(text)  # Markdown as plain text: every browser shows it
