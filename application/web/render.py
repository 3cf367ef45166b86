"""The console's templates: Jinja2 with autoescape on, and the filters the pages share."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from runledger import __version__
from runledger.application import plain
from runledger.application import words as vocabulary
from runledger.application.display import json_text
from runledger.application.errors import BadQuery
from runledger.application.services.tokens import Actor
from runledger.application.web import words
from runledger.application.web.session import form_token
from runledger.domain.text import safe_text
from runledger.domain.token import may

HERE = Path(__file__).parent
MAX_JSON = 4_000
HEADERS = {
    # Everything the console needs is served by runledger itself: no inline script, no style
    # attribute, no other origin. A string that slipped past escaping still could not run.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _json(value: object) -> Markup:
    """A value as indented JSON for a <pre>: escaped here, so its line breaks stay line breaks."""
    text = json_text(value)
    if len(text) > MAX_JSON:
        text = text[:MAX_JSON] + f"… ({len(text) - MAX_JSON:,} more characters)"
    return Markup.escape(text)


templates = Jinja2Templates(directory=HERE / "templates")
env = templates.env
env.autoescape = True  # every string from a module, an author or an operator is escaped
# ... and first made visible: control characters, bidi overrides and megabytes shown, not obeyed.
env.finalize = lambda value: safe_text(value) if type(value) is str else value
env.filters.update(
    when=words.when, iso=words.iso, short=words.short, json=_json, said=plain.value_said
)
env.globals.update(
    CLEANUP=vocabulary.CLEANUP,
    FILTER=vocabulary.FILTER,
    RUN=vocabulary.RUN,
    STATE=vocabulary.STATE,
    word=vocabulary.word,
    cleanup_word=vocabulary.cleanup_word,
    cleanup_detail=vocabulary.cleanup_detail,
    state_word=vocabulary.state_word,
    log_kind=vocabulary.log_kind,
    event_said=vocabulary.event_said,
    field_said=vocabulary.field_said,
    error_said=vocabulary.error_said,
    entries_counted=plain.entries,
    version=__version__,
)


def as_typed(text: str) -> Markup:
    """Text for a text area as it was typed, line breaks and all: escaped here, not made safe by
    the page's finalize, which would show every line break as \\n."""
    return Markup.escape(text.encode("utf-8", "replace").decode("utf-8"))


def choice(field: str, value: str, allowed: Any) -> Any:
    """A filter's value from a form: "" is "any"; anything else must be one of ``allowed``."""
    if not value:
        return None
    options = get_args(allowed)
    if value not in options:
        raise BadQuery(f"{field}: {safe_text(repr(value), 60)} is not one of {', '.join(options)}")
    return value


def page(
    request: Request,
    template: str,
    actor: Actor | None,
    code: int = 200,
    /,
    **context: Any,
) -> HTMLResponse:
    """A page (or, for htmx, the fragment it asks for) with what every page shows."""
    response: HTMLResponse = templates.TemplateResponse(
        request,
        template,
        {
            "actor": actor,
            "may_act": actor is not None and may(actor.role, "operator"),
            "csrf": form_token(request),
            "htmx": request.headers.get("HX-Request") == "true",
            **context,
        },
        status_code=code,
    )
    response.headers.update(HEADERS)
    return response
