"""The definitions (W5) pages in headless Chromium against a real server: the W5 walk by clicks
(verify, publish verified, schedule, the occurrence with its verified badge) without a page load,
and the diff after an edit, on a wide screen and on a phone. Screenshots land in
artifacts/screenshots (definitions, definition, occurrences, definition-phone)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from playwright.sync_api import Page, expect

from tests.support.api_support import Api, shard_run, tick
from tests.support.console_support import (
    Browsing,
)
from tests.support.playing import Clock

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def overflow(page: Page) -> int:
    found: int = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return found


def nav(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Console").get_by_role("link", name=name).click()


def dialogs_of(page: Page) -> list[str]:
    opened: list[str] = []
    page.on("dialog", lambda dialog: opened.append(dialog.message))
    return opened


def test_the_w5_walk_by_clicks_verifies_publishes_verified_and_schedules_in_place(
    browsing: Browsing, api: Api, clock: Clock
) -> None:
    api.rl.definitions.create("harvest", shard_run(2, name="Harvest fair"), "ann")
    api.rl.definitions.create("lanterns", shard_run(1, name="Lantern walk"), "ann")
    page = browsing.signed_in("operator")
    nav(page, "Definitions")
    expect(page.locator('tr[data-definition="harvest"] [data-draft]')).to_contain_text(
        "⚠ unverified"
    )
    page.get_by_role("link", name="harvest").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("harvest")
    page.evaluate("window.stillHere = true")
    confirm, outcome = page.locator("#confirm"), page.locator("#confirm [data-outcome]")

    page.get_by_role("button", name="Verify…").click()
    expect(confirm).to_contain_text("Verify 'harvest': a dry run of its draft (revision 1")
    page.get_by_role("button", name="Yes, verify").click()
    expect(outcome).to_contain_text("Dry run 1 by alice at 2026-12-02 12:00:00 UTC passed")
    expect(page.locator('[data-fact="draft"]')).to_contain_text("✓ verified by alice")

    page.get_by_role("button", name="Publish…").click()
    expect(confirm).to_contain_text("it will be VERIFIED by alice at 2026-12-02 12:00:00 UTC")
    expect(confirm).to_contain_text("No scheduled occurrence waits to be re-pinned.")
    browsing.shot(page, "definition-confirm")
    page.get_by_role("button", name="Yes, publish").click()
    expect(outcome).to_have_text(
        "harvest version 1 published verified by alice at 2026-12-02 12:00:00 UTC; "
        "0 scheduled occurrence(s) re-pinned to it"
    )
    expect(page.locator('tr[data-version="1"]')).to_contain_text("✓ verified by alice")

    page.get_by_label("Schedule an occurrence at (UTC)").fill("2026-12-02T14:00")
    page.get_by_role("button", name="Schedule…").click()
    expect(confirm).to_contain_text(
        "Schedule 'harvest' at 2026-12-02 14:00:00 UTC, pinned to its latest version 1 "
        "(verified by alice at 2026-12-02 12:00:00 UTC)"
    )
    page.get_by_role("button", name="Yes, schedule").click()
    expect(outcome).to_contain_text("Scheduled 'harvest' at 2026-12-02 14:00:00 UTC by alice")
    row = page.locator("#occurrences tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("version 1")
    expect(row.locator('[data-verified="yes"]')).to_have_text("✓ verified")
    expect(row.locator("[data-status]")).to_have_text("… scheduled")
    assert page.evaluate("window.stillHere") is True  # every step swapped in place; no page load
    [listed] = api.get("/admin/occurrences", "viewer").json()["items"]
    assert (listed["version"], listed["verified"]["by"]) == (1, "alice")

    nav(page, "Definitions")
    expect(page.locator('tr[data-definition="harvest"] [data-next]')).to_contain_text(
        "2026-12-02 14:00:00 UTC"
    )
    browsing.shot(page, "definitions")
    clock.move_to(datetime(2026, 12, 2, 14, 0, tzinfo=UTC))
    tick(api.rl)  # the runner's start leg: the occurrence becomes a run of version 1
    page.goto(f"{browsing.url}/occurrences")
    started = page.locator("table.occurrences tbody tr")
    expect(started.locator("[data-status]")).to_have_text("✓ started")
    expect(started.locator("[data-verified='yes']")).to_have_text("✓ verified")
    browsing.shot(page, "occurrences")
    started.get_by_role("link", name=re.compile(r"^run ")).click()
    expect(page.locator("[data-origin]")).to_contain_text(
        "From definition harvest version 1: ✓ verified by alice at 2026-12-02 12:00:00 UTC"
    )
    expect(page.get_by_role("heading", level=1)).to_have_text("Harvest fair")


def test_the_diff_after_an_edit_marks_lines_in_words_and_fits_a_phone(
    browsing: Browsing, api: Api, clock: Clock
) -> None:
    api.rl.definitions.create("harvest", shard_run(2, name="Harvest fair"), "ann")
    api.rl.definitions.verify("harvest", "rita")
    api.rl.definitions.publish("harvest", "paul")
    api.rl.occurrences.schedule("harvest", clock.now, "sam")
    edited = shard_run(5, name=f"Harvest fair {HOSTILE[0]}")
    edited["phases"][0]["steps"].append({"id": "ghost", "action": HOSTILE[1]})
    clock.advance(60)
    api.rl.definitions.edit("harvest", edited, "ann")
    api.rl.definitions.verify("harvest", "rita")
    page = browsing.signed_in("operator")
    opened = dialogs_of(page)
    page.goto(f"{browsing.url}/definitions/harvest")
    removed, added = page.locator("li.line-removed"), page.locator("li.line-added")
    expect(removed).to_have_count(2)
    expect(removed.first.locator(".word")).to_have_text("removed")
    expect(removed.first.locator("code")).to_have_text('"name": "Harvest fair",')
    expect(added.first.locator(".word")).to_have_text("added")
    expect(added.first.locator("code")).to_have_text(f'"name": "Harvest fair {HOSTILE[0]}",')
    expect(page.locator('tr[data-dry-run="2"]')).to_contain_text(
        f'step ghost (phase p1): phases.0.steps.1.action: no module registers "{HOSTILE[1]}"'
    )
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    browsing.shot(page, "definition")
    page.get_by_role("button", name="Publish…").click()
    expect(page.locator("#confirm")).to_contain_text("published UNVERIFIED")
    expect(page.locator("#confirm")).to_contain_text(
        "1 scheduled occurrence not yet started will be re-pinned to version 2 and marked "
        "unverified"
    )
    page.set_viewport_size({"width": 375, "height": 900})
    page.goto(f"{browsing.url}/definitions/harvest")
    expect(page.locator("li.line-added").first).to_be_visible()
    assert overflow(page) <= 0
    browsing.shot(page, "definition-phone")
    for path in ("/definitions", "/occurrences", "/definitions/harvest/draft"):
        page.goto(browsing.url + path)
        assert overflow(page) <= 0, path
    page.wait_for_timeout(200)  # time for a handler that slipped through to open its dialog
    assert opened == []
