"""GET /docs: the Swagger UI over /openapi.json, its JavaScript and CSS served by the service itself.

FastAPI's default page loads Swagger UI from a CDN, which an offline machine cannot reach; the files here are
swagger-ui-dist 5.35.0 from npm (Apache-2.0, LICENSE and NOTICE alongside), served from /static/swagger.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

SWAGGER_DIR = Path(__file__).resolve().parent.parent / "static" / "swagger"
SWAGGER_URL = "/static/swagger"


@router.get("/docs")
def docs() -> HTMLResponse:
    """Interactive API documentation (open: no token needed to read it)."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="planewatch API",
        swagger_js_url=f"{SWAGGER_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER_URL}/swagger-ui.css",
        swagger_favicon_url=f"{SWAGGER_URL}/favicon-32x32.png",
    )
