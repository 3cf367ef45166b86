"""The console in headless Chromium against a real server: signing in, the runs page, names
that are markup, a phone's width, signing out. Screenshots land in artifacts/screenshots."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.api_support import Api, shard_run
from tests.support.console_support import (
    Browsing,
)

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def dialogs_of(page: Page) -> list[str]:
    """Every alert, confirm or prompt the page opens: markup that ran would open one."""
    opened: list[str] = []

    def note(dialog: object) -> None:
        opened.append(str(getattr(dialog, "message", "")))

    page.on("dialog", note)
    return opened


def test_signing_in_shows_the_runs_with_the_person_named(browsing: Browsing, api: Api) -> None:
    run = api.start(shard_run(1, name="harvest moon"))
    page = browsing.signed_in("operator")
    expect(page.locator("[data-actor]")).to_have_text("alice")
    row = page.locator(f"tr[data-run='{run}']")
    expect(row).to_contain_text("harvest moon")
    expect(row).to_contain_text("running")
    browsing.shot(page, "runs")


def test_names_that_are_markup_show_as_text_and_nothing_runs(browsing: Browsing, api: Api) -> None:
    for name in HOSTILE:
        api.start(shard_run(1, name=name))
    page = browsing.open()
    opened = dialogs_of(page)
    page.goto(browsing.url + "/signin")
    page.get_by_label("API token").fill(api.secrets["viewer"])
    page.get_by_role("button", name="Sign in").click()
    for name in HOSTILE:
        expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()
    page.wait_for_timeout(500)
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0
    assert opened == []
    browsing.shot(page, "runs-hostile-names")


def test_at_a_phones_width_the_runs_page_fits_and_says_status_in_words(
    browsing: Browsing, api: Api
) -> None:
    api.start(shard_run(1, name="a run with a rather long name for a small screen"))
    page = browsing.signed_in("viewer", width=375)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    expect(page.locator("table.runs [data-status='running']")).to_have_text("… running")
    browsing.shot(page, "runs-phone")


def test_signing_out_returns_to_sign_in_and_the_pages_need_it_again(
    browsing: Browsing,
) -> None:
    page = browsing.signed_in("viewer")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("main")).to_contain_text("You have signed out.")
    page.goto(browsing.url + "/runs")
    expect(page.get_by_label("API token")).to_be_visible()
