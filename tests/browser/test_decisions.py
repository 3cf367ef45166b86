"""A person decides, in headless Chromium against a real server: keeping a drifted entry from
its page behind a confirmation that asks the reason, then keeping what is left from the run's
page, until the run no longer needs a person; a viewer is offered neither. Screenshots land in
artifacts/screenshots."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.application.test_decisions import WHY, drifted, leases
from tests.support.api_support import Api
from tests.support.console_support import Browsing
from tests.support.playing import Clock
from tests.support.world import World


def test_a_person_keeps_a_drift_then_what_is_left_and_the_run_no_longer_needs_a_person(
    browsing: Browsing, api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    for width in (1280, 375):
        page = browsing.signed_in("operator", width)
        page.goto(f"{browsing.url}/runs/{run}")
        expect(page.locator("#live [data-status='incomplete']")).to_be_visible()
        expect(page.get_by_role("button", name="Keep what is left…")).to_be_visible()
        expect(page.locator("[data-decide-group='drifted']")).to_be_visible()
        browsing.shot(page, f"decide-run-{width}")
    page.goto(f"{browsing.url}/runs/{run}")
    page.locator(f"a[href='/entries/{north.entry_id}']").click()
    page.wait_for_url(f"{browsing.url}/entries/{north.entry_id}")
    page.get_by_role("button", name="Keep…").click()
    page.wait_for_url(f"{browsing.url}/entries/{north.entry_id}/keep?")  # a form's GET
    expect(page.locator(".foreseen")).to_have_text(
        f"Keep {north.name} of 'storms' as it stands in the world, in the name alice, with the "
        "reason you give: nothing is given back, and the entry is no longer asked for. 'storms' "
        "then has 1 entry left to give back."
    )
    browsing.shot(page, "decide-keep-confirm")
    page.get_by_label("Reason (required, recorded with what is kept)").fill(WHY)
    page.get_by_role("button", name="Yes, keep it").click()
    page.wait_for_url(f"{browsing.url}/entries/{north.entry_id}")
    expect(page.locator("[data-outcome]")).to_have_text(
        f"Kept {north.name} in the name alice ({WHY}): 1 entry left to give back."
    )
    expect(page.locator("[data-kept-reason]")).to_have_text(f"Kept by alice because: {WHY}")
    browsing.shot(page, "decide-entry-kept")
    page.goto(f"{browsing.url}/runs/{run}")
    page.get_by_role("button", name="Keep what is left…").click()
    page.wait_for_url(f"{browsing.url}/runs/{run}/keep-rest?")
    expect(page.locator(".decide-left li")).to_have_count(1)
    page.get_by_label("Reason (required, recorded with what is kept)").fill("sleet is fine")
    page.get_by_role("button", name="Yes, keep what is left").click()
    page.wait_for_url(f"{browsing.url}/runs/{run}")
    expect(page.locator("[data-outcome]")).to_have_text(
        "Kept what was left in the name alice (sleet is fine): 1 entry kept; nothing is left to "
        "give back."
    )
    expect(page.locator("#live [data-status='complete']")).to_be_visible()
    expect(page.get_by_role("button", name="Keep what is left…")).to_have_count(0)
    browsing.shot(page, "decide-run-kept")
    assert game.values == {"north": "hail", "east": "sleet"}


def test_a_viewer_is_offered_no_decision(browsing: Browsing, api: Api, game: World) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    page = browsing.signed_in("viewer")
    page.goto(f"{browsing.url}/runs/{run}")
    expect(page.locator("#live")).to_be_visible()
    expect(page.get_by_role("button", name="Keep what is left…")).to_have_count(0)
    expect(page.locator("[data-decide-group]")).to_have_count(0)
    page.goto(f"{browsing.url}/entries/{north.entry_id}")
    expect(page.get_by_role("button", name="Keep…")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry this entry")).to_have_count(0)
