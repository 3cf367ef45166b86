"""The run page in headless Chromium against a real server: retrying cleanup and cancelling
without cleanup in place (no page load), the W2 sentences changing as the runner works, what a
viewer sees, names and errors that are markup. Screenshots land in artifacts/screenshots."""

from __future__ import annotations

from uuid import UUID

from playwright.sync_api import Page, expect

from runledger.application.modules.protocol import Registry
from tests.application.test_person_holds import one_of_two_held, said, sky_world
from tests.support.api_support import (
    Api,
    Shard,
    shard_run,
    tick,
)
from tests.support.console_support import (
    Browsing,
    incomplete_run,
)
from tests.support.playing import Clock

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def mark(page: Page) -> None:
    """A note on this document: a page load would lose it."""
    page.evaluate("window.__marker = 1")


def still_marked(page: Page) -> bool:
    return bool(page.evaluate("window.__marker === 1"))


def open_run(browsing: Browsing, page: Page, run: UUID) -> None:
    page.goto(f"{browsing.url}/runs/{run}")
    expect(page.locator("#live")).to_be_visible()


def test_retry_cleanup_gives_everything_back_in_place(
    browsing: Browsing, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    page = browsing.signed_in("operator")
    page.get_by_role("link", name="festival").click()
    page.wait_for_url(f"{browsing.url}/runs/{run}")
    expect(page.locator("#live [data-status='incomplete']")).to_have_text("⚠ needs a person")
    expect(page.locator("details[data-state='failing'] tbody tr")).to_have_count(2)
    browsing.shot(page, "run-incomplete")
    mark(page)
    page.get_by_role("button", name="Retry cleanup").click()
    confirm = page.locator("#confirm .confirm")
    expect(confirm).to_contain_text(
        "Retry cleanup of 'festival': ask the modules again for its 2 entries left to give back, "
        "in the name alice."
    )
    browsing.shot(page, "run-confirm")
    page.get_by_role("button", name="Yes, retry cleanup").click()
    expect(page.locator("#confirm [data-outcome]")).to_have_text(
        "Cleanup retried by alice: 2 given back, 0 failing; cleanup: nothing left."
    )
    expect(page.locator("details[data-state='reverted'] tbody tr")).to_have_count(2)
    expect(page.locator("details[data-state='failing']")).to_have_count(0)
    expect(page.locator("#live [data-status='complete']")).to_have_text("✓ nothing left")
    expect(page.get_by_role("button", name="Retry cleanup")).to_have_count(0)
    assert still_marked(page)
    browsing.shot(page, "run-after-retry")


def test_retry_cleanup_says_first_which_lease_it_leaves_because_another_live_run_holds_it(
    browsing: Browsing, api: Api, registry: Registry
) -> None:
    sky = sky_world(registry)
    run, other = one_of_two_held(api.rl, sky)
    held = said("north", other, "2026-12-02 13:00:00")
    page = browsing.signed_in("operator")
    open_run(browsing, page, run)
    page.get_by_role("button", name="Retry cleanup").click()
    confirm = page.locator("#confirm .confirm")
    expect(confirm.locator(".foreseen")).to_have_text(
        "Retry cleanup of 'A': ask the modules again for 1 of its 2 entries left to give back, "
        "in the name alice; 1 lease entry will not be restored, because another live run holds "
        "its target:"
    )
    expect(confirm.locator("ul.held li")).to_have_text([held])
    browsing.shot(page, "run-confirm-held")
    page.get_by_role("button", name="Yes, retry cleanup").click()
    expect(page.locator("#confirm [data-outcome]")).to_have_text(
        "Cleanup retried by alice: 0 given back, 0 failing, 1 drifted; cleanup: needs a person "
        f"(2 entries left). Left alone: {held}."
    )
    assert sky.values == {"north": "fog", "east": "sleet"}


def test_cancel_without_cleanup_at_a_phones_width_keeps_everything_in_alices_name(
    browsing: Browsing, api: Api
) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    page = browsing.signed_in("operator", width=375)
    open_run(browsing, page, run)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    browsing.shot(page, "run-phone")
    mark(page)
    page.get_by_role("button", name="Cancel without cleanup").click()
    expect(page.locator("#confirm")).to_contain_text(
        "are kept, left in the world in the name alice"
    )
    page.get_by_role("button", name="Yes, cancel without cleanup").click()
    expect(page.locator("#confirm [data-outcome]")).to_have_text(
        "Cancelled by alice without cleanup: 2 entries kept in the name alice."
    )
    expect(page.locator("details[data-state='kept'] [data-kept-by]")).to_have_text(
        ["alice", "alice"]
    )
    expect(page.locator("#live [data-status='cancelled']")).to_be_visible()
    assert still_marked(page)
    browsing.shot(page, "run-phone-kept")


def test_the_page_follows_the_runner_and_says_why_the_phase_waits(
    browsing: Browsing, api: Api
) -> None:
    run = api.start(shard_run(2, advance="manual"))
    page = browsing.signed_in("operator")
    open_run(browsing, page, run)
    phase = page.locator("li[data-phase='p1']")
    expect(phase).to_contain_text("Phase p1: running steps")
    expect(phase).to_contain_text(
        "Why this phase has not advanced: step spawn waits for the runner to dispatch it"
    )
    page.get_by_role("button", name="Abort").click()
    page.get_by_label("Reason").fill("half-typed")
    mark(page)
    tick(api.rl)
    expect(phase).to_contain_text("Phase p1: steps done, waiting for a person to advance it")
    expect(phase).to_contain_text(
        "Why this phase has not advanced: its advance rule is manual: a person must advance it"
    )
    expect(page.locator("details[data-state='live'] tbody tr")).to_have_count(2)
    expect(page.get_by_label("Reason")).to_have_value("half-typed")
    assert still_marked(page)
    browsing.shot(page, "run-waiting")


def test_a_viewer_sees_no_buttons_and_markup_in_names_and_errors_runs_nothing(
    browsing: Browsing, api: Api, shard: Shard, clock: Clock
) -> None:
    shard.revert_answer = {"ok": False, "error": f"{HOSTILE[0]} {HOSTILE[1]}"}
    run = api.start(shard_run(1, name=HOSTILE[0] + HOSTILE[1]))
    tick(api.rl, 2)
    page = browsing.open()
    opened: list[str] = []
    page.on("dialog", lambda dialog: opened.append(dialog.message))
    page.goto(f"{browsing.url}/signin?next=/runs/{run}")
    page.get_by_label("API token").fill(api.secrets["viewer"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{browsing.url}/runs/{run}")
    expect(page.get_by_role("heading", level=1)).to_have_text(HOSTILE[0] + HOSTILE[1])
    expect(page.locator("details[data-state='failing']")).to_contain_text(
        f"{HOSTILE[0]} {HOSTILE[1]}"
    )
    clock.advance(120)
    tick(api.rl)  # the next poll swaps the markup in again, through htmx this time
    failing = page.locator("details[data-state='failing'] [data-attempts]")
    expect(failing).to_have_text("2")
    assert page.locator("main button").count() == 0
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0
    assert opened == []
    browsing.shot(page, "run-viewer-hostile")
