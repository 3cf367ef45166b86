"""Swagger UI at /docs, served by runledger itself under the console's Content-Security-Policy:
its script and style are the vendored copies in the console's /static (web/static), and the one
inline script FastAPI's page starts it with is allowed by its hash, nothing else. ReDoc is off."""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

SWAGGER = "5.31.0"
SCRIPT = f"/static/swagger-ui-{SWAGGER}-bundle.js"
STYLE = f"/static/swagger-ui-{SWAGGER}.css"
_INLINE = re.compile(r"<script>(.*?)</script>", re.DOTALL)

router = APIRouter(include_in_schema=False)


def csp(script_hashes: list[str]) -> str:
    """The console's policy (web/render.py), with these inline scripts allowed by hash and
    Swagger UI's icons, which are data: URLs."""
    allowed = " ".join(f"'sha256-{h}'" for h in script_hashes)
    return (
        f"default-src 'self'; script-src 'self' {allowed}; style-src 'self'; "
        "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'self'"
    )


def _sha256(script: str) -> str:
    return base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _page() -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="runledger · API",
        swagger_js_url=SCRIPT,
        swagger_css_url=STYLE,
        swagger_favicon_url="/static/favicon.svg",
    )
    inline = [_sha256(script) for script in _INLINE.findall(bytes(page.body).decode())]
    page.headers.update(
        {
            "Content-Security-Policy": csp(inline),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        }
    )
    return page


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui() -> HTMLResponse:
    """The API's interactive documentation."""
    return _page()
