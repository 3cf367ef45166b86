"""The console as the tests drive it: page by page through the app, or in headless Chromium
against a real uvicorn server on a spare port.

Like api_support, fixtures are defined as ``*_fixture`` and imported by the test files that use
them."""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import uvicorn
from httpx import Response
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright
from starlette.types import ASGIApp

from runledger.application.bootstrap import init_store
from runledger.application.settings import Settings
from tests.support.api_support import DOWN, Api, Shard, shard_run, tick
from tests.support.playing import START, Clock

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(
    os.environ.get("RUNLEDGER_SCREENSHOTS")
    or Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
)
"""Screenshots of the main pages, kept by every browser run for a person to look at
(RUNLEDGER_SCREENSHOTS names another folder)."""

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


def text_of(html: str) -> str:
    """What a person reads on the page: the main part's text, tags gone, spaces collapsed."""
    main = html.split("<main", 1)[-1]
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", main)).split()).replace(" .", ".")


@dataclass
class Console:
    """A person at the console without a browser: cookies kept, forms posted with their token."""

    api: Api

    def get(self, path: str, **kwargs: Any) -> Response:
        answer: Response = self.api.client.get(path, follow_redirects=False, **kwargs)
        return answer

    def post(self, path: str, data: dict[str, str], **kwargs: Any) -> Response:
        answer: Response = self.api.client.post(path, data=data, follow_redirects=False, **kwargs)
        return answer

    def form_token(self, path: str = "/signin") -> str:
        return csrf_of(self.get(path).text)

    def sign_in(self, who: str = "operator") -> None:
        answer = self.post(
            "/signin",
            {"token": self.api.secrets[who], "csrf": self.form_token(), "next": "/runs"},
        )
        assert answer.status_code == 303, answer.text

    def act(
        self, path: str, data: dict[str, str] | None = None, from_page: str = "/runs"
    ) -> Response:
        """Post a form as the page ``from_page`` would: with this session's CSRF token."""
        return self.post(path, {"csrf": self.form_token(from_page), **(data or {})})


def incomplete_run(
    api: Api, shard: Shard, clock: Clock, count: int = 2, name: str = "festival"
) -> UUID:
    """A run that completed while its shard was down: every revert failed, cleanup incomplete.
    The shard is back up when this returns, so retrying cleanup gives everything back."""
    shard.revert_answer = DOWN
    run = api.start(shard_run(count, name=name))
    tick(api.rl, 2)
    clock.advance(120)
    tick(api.rl)
    assert api.run(run)["run"]["cleanup_status"] == "incomplete"
    shard.revert_answer = None
    return run


@pytest.fixture(name="console")
def console_fixture(api: Api) -> Console:
    return Console(api)


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def live_server(app: ASGIApp) -> Iterator[str]:
    """The app served by uvicorn in this process, on a spare port, until the block ends."""
    config = uvicorn.Config(app, host="127.0.0.1", port=spare_port(), log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="console-server", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the console server did not start")
            threading.Event().wait(0.02)
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(name="clock")
def unfrozen_clock_fixture() -> Clock:
    """The test's clock without freezegun: a browser and a real server keep real time (their
    event loops wait by it); the runledger still reads this clock, which the test moves."""
    return Clock(START)


_CHROMIUM: list[tuple[Playwright, Browser]] = []


@pytest.fixture(scope="session", name="browser")
def browser_fixture(request: pytest.FixtureRequest) -> Browser:
    """Debian's headless Chromium, driven by Playwright (never `playwright install`).

    One for the whole session: each test module that imports this fixture is, to pytest, a
    fixture of its own, and a second Playwright started in the same thread refuses to run."""
    if not _CHROMIUM:
        if not CHROMIUM.exists():
            pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium chromium-driver")
        playwright = sync_playwright().start()
        _CHROMIUM.append((playwright, playwright.chromium.launch(executable_path=str(CHROMIUM))))
        request.config.add_cleanup(_close_chromium)
    return _CHROMIUM[0][1]


def _close_chromium() -> None:
    playwright, browser = _CHROMIUM.pop()
    browser.close()
    playwright.stop()


@dataclass
class Browsing:
    """The console served for real, and people opening it in the browser."""

    url: str
    browser: Browser
    api: Api
    contexts: list[BrowserContext] = field(default_factory=list)

    def open(self, width: int = 1280) -> Page:
        context = self.browser.new_context(viewport={"width": width, "height": 900})
        context.set_default_timeout(10_000)
        self.contexts.append(context)
        return context.new_page()

    def signed_in(self, who: str = "operator", width: int = 1280) -> Page:
        """A new browser session signed in with the token of ``who`` (a role of api_support)."""
        page = self.open(width)
        page.goto(self.url + "/runs")
        page.get_by_label("API token").fill(self.api.secrets[who])
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(self.url + "/runs")
        return page

    def shot(self, page: Page, name: str) -> None:
        """A screenshot a person can look at after the run (artifacts/, never committed)."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture(name="browsing")
def browsing_fixture(api: Api, browser: Browser) -> Iterator[Browsing]:
    with live_server(api.client.app) as url:
        browsing = Browsing(url, browser, api)
        try:
            yield browsing
        finally:
            browsing.close()


@pytest.fixture(name="store_url")
def sqlite_store_url_fixture(tmp_path: Path) -> str:
    """Browser tests run on the embedded store: the pages are the same code on both stores, and
    the page-level tests (test_console_pages) run every page on both."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    return url
