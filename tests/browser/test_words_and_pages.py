"""One vocabulary, the bulk cleanup page and a new definition, in headless Chromium against a
real server, on a wide screen and on a phone: kept never reads as given back, a running run
reads in use, an entry's page speaks words with its stored names behind a toggle, a plan is
made, confirmed and applied by clicks, and a definition is created from pasted JSON after a
refusal naming the field. Screenshots: words-runs-W, words-run-W, words-entry-W,
words-entry-raw-W, bulk-plan-W, bulk-confirm-W, bulk-applied-W, definition-new-W,
definition-created-W (W = 1280 or 375)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.support.api_support import Api, Shard, shard_run
from tests.support.console_support import Browsing, incomplete_run
from tests.support.playing import Clock
from tests.support.words_support import kept_and_given_back, still_running

WIDTHS = [1280, 375]
RAW = ("claim_worker", "claim_expires_at", "terminal", "RevertClaimed", "RevertFailed")


def fits(page: Page) -> None:
    """Nothing runs off the side of the screen (a phone's included)."""
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def nav(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Console").get_by_role("link", name=name).click()


@pytest.mark.parametrize("width", WIDTHS)
def test_kept_never_reads_as_given_back_and_a_running_run_reads_in_use(
    browsing: Browsing, api: Api, clock: Clock, width: int
) -> None:
    kept = kept_and_given_back(api, clock)
    running = still_running(api)
    page = browsing.signed_in("viewer", width=width)
    kept_row = page.locator(f"tr[data-run='{kept}'] td[data-label='Cleanup']")
    expect(kept_row).to_have_text("✓ nothing left — 1 given back, 2 kept")
    running_row = page.locator(f"tr[data-run='{running}'] td[data-label='Cleanup']")
    expect(running_row).to_have_text("… in use — 2 entries in use by the run")
    listed = page.locator("#runs").inner_text()
    assert "all given back" not in listed and "giving back" not in listed
    fits(page)
    browsing.shot(page, f"words-runs-{width}")
    page.get_by_role("link", name="harbour").click()
    cleanup = page.locator("#live dl.facts dd").nth(1)
    expect(cleanup).to_have_text("✓ nothing left — 1 given back, 2 kept by alice")
    expect(page.locator("details[data-state='kept'] [data-kept-by]")).to_have_text(
        ["alice", "alice"]
    )
    expect(page.locator("td[data-label='What'] [data-kind='run.started']")).to_have_text(
        "… run started"
    )
    fits(page)
    browsing.shot(page, f"words-run-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_an_entry_page_speaks_words_and_shows_its_stored_names_only_when_asked(
    browsing: Browsing, api: Api, shard: Shard, clock: Clock, width: int
) -> None:
    run = incomplete_run(api, shard, clock)
    crate = next(e for g in api.run(run)["entries"] for e in g["entries"] if e["kind"] == "crate")
    page = browsing.signed_in("viewer", width=width)
    page.goto(f"{browsing.url}/entries/{crate['entry_id']}")
    expect(page.locator("[data-fact='state']")).to_have_text("⚠ failing")
    shown = page.locator("main").inner_text()
    for raw in RAW:
        assert raw not in shown, raw
    assert "taken to be given back" in shown and '"the shard is down"' not in shown
    fits(page)
    browsing.shot(page, f"words-entry-{width}")
    page.locator("details[data-raw='entry'] > summary").click()
    page.locator("details[data-raw='2'] > summary").click()
    opened = page.locator("main").inner_text()
    assert "claim_worker" in opened and "RevertClaimed" in opened and "terminal" in opened
    fits(page)
    browsing.shot(page, f"words-entry-raw-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_bulk_plan_is_made_confirmed_and_applied_by_clicks(
    browsing: Browsing, api: Api, shard: Shard, clock: Clock, width: int
) -> None:
    run = incomplete_run(api, shard, clock)
    page = browsing.signed_in("operator", width=width)
    nav(page, "Cleanup")
    page.get_by_label("Module").fill("shard")
    page.get_by_label("Cleanup").select_option(label="needs a person")
    page.get_by_role("button", name="Make a plan").click()
    expect(page.locator("[data-plan-said]")).to_have_text(
        "1 run, 2 entries to ask again; nothing written."
    )
    expect(page.locator("td[data-label='Would ask']")).to_have_count(2)
    fits(page)
    browsing.shot(page, f"bulk-plan-{width}")
    page.get_by_role("button", name="Apply this plan…").click()
    expect(page.locator(".confirm .foreseen")).to_contain_text(
        "ask the modules again for 2 entries of 1 run, each run's cleanup retried in the name "
        "alice."
    )
    fits(page)
    browsing.shot(page, f"bulk-confirm-{width}")
    page.get_by_role("button", name="Yes, apply plan").click()
    expect(page.locator("[data-outcome]")).to_contain_text(
        "1 run asked again. festival: 2 given back, 0 failing; cleanup: nothing left."
    )
    fits(page)
    browsing.shot(page, f"bulk-applied-{width}")
    assert api.run(run)["run"]["cleanup_status"] == "complete"


@pytest.mark.parametrize("width", WIDTHS)
def test_a_definition_is_created_from_pasted_json_after_a_refusal_naming_the_field(
    browsing: Browsing, api: Api, width: int
) -> None:
    page = browsing.signed_in("operator", width=width)
    nav(page, "Definitions")
    page.get_by_role("link", name="New definition…").click()
    page.get_by_label("Name").fill("fair")
    spec = shard_run(2)
    broken = {**spec, "phases": [{"id": "p", "steps": [{"id": "no spaces", "action": "a"}]}]}
    page.get_by_label("Spec (JSON)").fill(json.dumps(broken))
    page.get_by_role("button", name="Create the definition").click()
    expect(page.locator("[data-refused]")).to_contain_text("spec.phases.0.steps.0.id: ")
    expect(page.get_by_label("Spec (JSON)")).to_have_value(json.dumps(broken))
    fits(page)
    browsing.shot(page, f"definition-new-{width}")
    page.get_by_label("Spec (JSON)").fill(json.dumps(spec, indent=2))
    page.get_by_role("button", name="Create the definition").click()
    page.wait_for_url(f"{browsing.url}/definitions/fair")
    expect(page.locator("[data-outcome]")).to_contain_text("Definition fair created by alice")
    fits(page)
    browsing.shot(page, f"definition-created-{width}")
    assert [d["name"] for d in api.get("/admin/definitions", "viewer").json()["items"]] == ["fair"]
