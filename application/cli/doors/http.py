"""Talking to a runledger server's HTTP API as the token's person: one request, its answer read
as the API's schema, and whatever goes wrong said in one sentence (exit 1), never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from runledger import __version__
from runledger.application.cli.doors.contexts import Server
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest, Conflict, NotFound, RunledgerError

M = TypeVar("M", bound=BaseModel)
TIMEOUT = httpx.Timeout(60.0, connect=10.0)
"""A command waits this long for an answer (a cleanup works a run's groups before answering),
and 10 s to connect."""
MOST_PAGES = 1_000
"""A list the CLI gathers page by page stops here, whatever the server says next."""


class ServerTrouble(RunledgerError):
    """The server could not be reached, refused the token, or failed: exit 1, one sentence."""


class Http:
    """One server, with the token on every request."""

    def __init__(self, server: Server) -> None:
        self.url = server.url
        self.client = httpx.Client(
            base_url=server.url,
            headers={
                "Authorization": f"Bearer {server.token}",
                "User-Agent": f"runledger-cli/{__version__}",
                "Accept": "application/json",
            },
            timeout=TIMEOUT,
            follow_redirects=False,
        )

    def close(self) -> None:
        self.client.close()

    def send(self, method: str, path: str, **asked: Any) -> Any:
        """The JSON the API answers, or the refusal raised as the error the store would raise."""
        key, headers = asked.pop("key", None), dict(asked.pop("headers", {}))
        if key is not None:
            headers["Idempotency-Key"] = key
        try:
            answer = self.client.request(method, path, headers=headers, **asked)
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise ServerTrouble(f"cannot reach the server at {self.url}: {_why(error)}") from None
        if answer.status_code >= 400:
            raise self._refusal(answer)
        try:
            return answer.json()
        except (ValueError, RecursionError):
            raise ServerTrouble(self._not_api(answer)) from None

    def read(self, model: type[M], method: str, path: str, **asked: Any) -> M:
        return self.model(model, self.send(method, path, **asked), path)

    def model(self, model: type[M], found: Any, path: str) -> M:
        try:
            return model.model_validate(found)
        except ValidationError as error:
            raise ServerTrouble(
                f"the answer of {self.url}{path} is not what this runledger {__version__} reads "
                f"({safe_text(error.errors()[0].get('msg', ''), 200)})"
            ) from None

    def items(self, model: type[M], path: str, params: dict[str, Any] | None = None) -> list[M]:
        """Every item of a list route, page after page (a bare list is one page)."""
        found: list[M] = []
        asked = dict(params or {})
        for _ in range(MOST_PAGES):
            page = self.send("GET", path, params=asked)
            listed = page.get("items") if isinstance(page, dict) else page
            if not isinstance(listed, list):
                raise ServerTrouble(self._not_api_at(path))
            found += [self.model(model, one, path) for one in listed]
            cursor = page.get("next_cursor") if isinstance(page, dict) else None
            if not cursor:
                break
            asked["cursor"] = cursor
        return found

    def _refusal(self, answer: httpx.Response) -> RunledgerError:
        said, status = _detail(answer), answer.status_code
        made: dict[int, Callable[[str], RunledgerError]] = {
            404: NotFound,
            409: Conflict,
            422: BadRequest,
            400: BadRequest,
        }
        if status in made:
            return made[status](said)
        if status == 401:
            return ServerTrouble(
                f"the server at {self.url} refused the token ({said}); "
                f"runledger login {self.url} takes another"
            )
        if status == 429:
            after = answer.headers.get("Retry-After")
            wait = f"{safe_text(after, 20)} s" if after else "a while"
            return ServerTrouble(f"the server at {self.url} asks to wait {wait}: {said}")
        if status == 403:
            return ServerTrouble(f"the server at {self.url} refused: {said}")
        return ServerTrouble(f"the server at {self.url} answered {status}: {said}")

    def _not_api(self, answer: httpx.Response) -> str:
        return f"{self._not_api_at(answer.url.path)} (HTTP {answer.status_code})"

    def _not_api_at(self, path: str) -> str:
        return f"{self.url}{path} did not answer as runledger's API does"


def _why(error: httpx.HTTPError | httpx.InvalidURL) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "no answer in time"
    cause = error.__cause__ or error.__context__
    said = str(cause or error) or type(error).__name__
    return safe_text(said, 300)


def _detail(answer: httpx.Response) -> str:
    """The refusal's sentence: problem+json and the API's older bodies both keep ``detail``, a
    sentence or, for a 422, a list whose messages name their fields."""
    try:
        detail = answer.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list):
        detail = "; ".join(_named(d) for d in detail)
    if not detail:
        detail = answer.reason_phrase or f"HTTP {answer.status_code}"
    return safe_text(detail, 2_000)


def _named(problem: Any) -> str:
    """One of a 422's problems, naming its field unless its sentence already does."""
    if not isinstance(problem, dict):
        return str(problem)
    said = str(problem.get("msg", ""))
    where = [str(p) for p in problem.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(where)
    return f"{field}: {said}" if field and not said.startswith(field) else said


def dumped(model: BaseModel) -> Any:
    return json.loads(model.model_dump_json())


def part(text: str) -> str:
    """A value as one segment of a path."""
    return quote(text, safe="")
