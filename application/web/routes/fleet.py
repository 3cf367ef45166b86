"""What serves the runs: the modules this process loaded, and the runners with their heartbeats."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from runledger.application.deps import FleetAnswersDep, Now, SettingsDep
from runledger.application.web.render import page
from runledger.application.web.session import Reader
from runledger.application.words import MODULE, RUNNER

router = APIRouter(include_in_schema=False)


@router.get("/modules", response_class=HTMLResponse)
def modules_page(request: Request, answers: FleetAnswersDep, actor: Reader) -> HTMLResponse:
    found = answers.modules()
    failed = sum(m.status != "loaded" for m in found)
    return page(
        request,
        "modules_list.html" if _htmx(request) else "modules.html",
        actor,
        modules=found,
        failed=failed,
        MODULE=MODULE,
    )


@router.get("/runners", response_class=HTMLResponse)
def runners_page(
    request: Request, answers: FleetAnswersDep, settings: SettingsDep, now: Now, actor: Reader
) -> HTMLResponse:
    order = list(RUNNER)
    found = sorted(  # newest first within each state, as the fleet lists them
        answers.runners(), key=lambda r: order.index(r.state) if r.state in order else len(order)
    )
    return page(
        request,
        "runners_list.html" if _htmx(request) else "runners.html",
        actor,
        runners=found,
        live=sum(r.state == "live" for r in found),
        gone_after_s=settings.runner_gone_s,
        now=now,
        RUNNER=RUNNER,
    )


def _htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"
