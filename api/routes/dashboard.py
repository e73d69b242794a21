"""GET / (the dashboard page, open) and GET /panels/{panel} (the rows behind each panel, guarded)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Response
from fastapi.responses import HTMLResponse

from api.deps import StoreDep, TokenGuard
from api.models import PanelPublic
from api.panels import Panel, panel_sql, tables_in
from api.queries import rows
from api.store import TableMissing
from schemas.tables import INCIDENTS

page_router = APIRouter(tags=["dashboard"])
router = APIRouter(tags=["dashboard"], dependencies=[TokenGuard])

PAGE = Path(__file__).resolve().parent.parent / "static" / "dashboard.html"


@page_router.get("/", response_class=HTMLResponse, include_in_schema=True)
def dashboard() -> HTMLResponse:
    """The self-contained dashboard page (no external assets); it asks for the token and calls the data API."""
    return HTMLResponse(PAGE.read_text(encoding="utf-8"), headers={"Cache-Control": "no-cache"})


@router.get("/panels/{panel}", response_model=PanelPublic)
def panel(store: StoreDep, panel: Panel) -> Response:
    """Run the panel's SQL file (api/sql/<panel>.sql) over the lake and return its rows (the file's LIMIT bounds
    them; the store caps time and rows). The JSON is built once per query result (per table version). A lake
    written by a pipeline older than incidents has no incidents table: its incident panel has no rows."""
    sql = panel_sql(panel)
    try:
        result = store.query(sql, tables_in(sql))
    except TableMissing as e:
        if e.table != INCIDENTS.name:
            raise
        return Response(content=PanelPublic(name=panel.value, columns=[], rows=[]).model_dump_json().encode(),
                        media_type="application/json")

    def answer() -> bytes:
        body = PanelPublic(name=panel.value, columns=result.column_names, rows=rows(result))
        return body.model_dump_json().encode()

    content = store.derive(("panel", panel.value, sql), (result,), answer)
    return Response(content=content, media_type="application/json")
