"""The console's icon: an SVG among its assets, linked from every page; /favicon.ico (which
some clients ask for without reading the page) leads to it."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse

router = APIRouter(include_in_schema=False)
ICON = "/static/favicon.svg"


@router.get("/favicon.ico")
def favicon() -> RedirectResponse:
    return RedirectResponse(ICON, status_code=308)
