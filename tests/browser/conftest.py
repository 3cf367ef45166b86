"""The console served for real (uvicorn on a spare port) and driven in Debian's headless Chromium
by Playwright. Every test in this folder runs on the embedded store with an unfrozen clock: the
pages are the same code on both stores, and the page-level tests run every page on both."""

from tests.support.api_support import api_fixture, api_rl_fixture, shard_fixture
from tests.support.console_support import (
    browser_fixture,
    browsing_fixture,
    sqlite_store_url_fixture,
    unfrozen_clock_fixture,
)

__all__ = [
    "api_fixture",
    "api_rl_fixture",
    "browser_fixture",
    "browsing_fixture",
    "shard_fixture",
    "sqlite_store_url_fixture",
    "unfrozen_clock_fixture",
]
