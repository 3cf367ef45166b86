"""What a person reads is true, on both stores, through the console, the API and the CLI's own
functions: kept never reads as given back, a running run's entries read as in use, a replaced
placeholder is not an entry, an earlier error on a row given back is history, an entry's page
and a run's log speak words (the stored names one toggle away), and runs may be listed by
cleanup under way now."""

from __future__ import annotations

import re
from uuid import UUID

from runledger.application.words import CLEANUP
from tests.support.api_support import Api, Shard, api_fixture, api_rl_fixture, shard_fixture, tick
from tests.support.console_support import Console, console_fixture, incomplete_run, text_of
from tests.support.playing import Clock
from tests.support.words_support import kept_and_given_back, still_running, under_way

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]

RAW = ("claim_worker", "claim_expires_at", "terminal", "RevertClaimed", "RevertFailed")


def row_of(page: str, run: UUID) -> str:
    found = re.search(rf'<tr data-run="{run}">(.*?)</tr>', page, re.S)
    assert found is not None, text_of(page)
    return text_of(found.group(1))


def without_toggles(html: str) -> str:
    """The page's text as it shows with every "stored names" toggle closed."""
    return text_of(re.sub(r'<details class="raw".*?</details>', "", html, flags=re.S))


def listed(api: Api, **params: str) -> list[str]:
    answer = api.get("/admin/events/runs", "viewer", params=params)
    assert answer.status_code == 200, answer.text
    return [run["run_id"] for run in answer.json()["items"]]


def test_a_run_cancelled_without_cleanup_reads_nothing_left_with_what_was_kept_never_given_back(
    console: Console, api: Api, clock: Clock
) -> None:
    run = kept_and_given_back(api, clock)
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}").text
    said = text_of(page)
    assert "Cleanup ✓ nothing left — 1 given back, 2 kept by alice" in said
    assert "all given back" not in said and "3 given back" not in said
    listing = console.get("/runs").text
    assert row_of(listing, run).endswith("✓ nothing left — 1 given back, 2 kept")


def test_a_running_run_reads_in_use_and_counts_no_replaced_placeholder(
    console: Console, api: Api
) -> None:
    run = still_running(api)
    summary = api.run(run)["run"]
    assert (summary["entries"], summary["unresolved"], summary["states"]) == (2, 2, {"live": 2})
    console.sign_in("viewer")
    row = row_of(console.get("/runs").text, run)
    assert "… in use — 2 entries in use by the run" in row
    assert CLEANUP["under_way"].said not in row and "of 3" not in row
    said = text_of(console.get(f"/runs/{run}").text)
    assert "Cleanup … in use — 2 entries in use by the run" in said
    assert "· replaced 1 placeholder, not counted as entries" in said


def test_an_earlier_error_on_an_entry_given_back_reads_as_history(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    assert api.post(f"/admin/events/runs/{run}/cleanup", "operator").status_code == 200
    [crate, _] = [e for g in api.run(run)["entries"] for e in g["entries"] if e["kind"] == "crate"]
    assert (crate["state"], crate["last_error"]) == ("reverted", "the shard is down")
    console.sign_in("viewer")
    said = text_of(console.get(f"/runs/{run}").text)
    assert "earlier attempt failed: the shard is down" in said
    entry = without_toggles(console.get(f"/entries/{crate['entry_id']}").text)
    assert "Before earlier attempt failed: the shard is down" in entry
    assert "Last error" not in entry


def test_an_entry_page_speaks_words_and_keeps_the_stored_names_behind_a_toggle(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    [crate, _] = [e for g in api.run(run)["entries"] for e in g["entries"] if e["kind"] == "crate"]
    console.sign_in("viewer")
    html = console.get(f"/entries/{crate['entry_id']}").text
    shown = without_toggles(html)
    for raw in RAW:
        assert raw not in shown, raw
    assert '"the shard is down"' not in shown and "null" not in shown
    assert "taken to be given back" in shown and "giving it back failed" in shown
    toggles = "".join(re.findall(r'<details class="raw".*?</details>', html, re.S))
    for raw in ("claim_worker", "RevertClaimed", "RevertFailed", "last_error"):
        assert raw in toggles, raw
    assert api.get(f"/admin/entries/{crate['entry_id']}", "viewer").json()["state"] == ("failing")


def test_a_runs_log_speaks_words_with_utc_times_and_keeps_its_kinds_in_titles(
    console: Console, api: Api
) -> None:
    run = still_running(api)
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}/log").text
    said = text_of(page)
    assert "2026-12-02 12:00:00 UTC … run started name: market" in said.replace(" :", ":")
    assert "step done" in said and "run.started" not in said and "step.succeeded" not in said
    assert 'title="run.started" data-kind="run.started"' in page
    kinds = [line["kind"] for line in api.get(f"/admin/events/runs/{run}/log").json()["items"]]
    assert kinds == ["run.started", "step.succeeded"]


def test_runs_whose_cleanup_is_under_way_are_listed_apart_from_the_running_ones(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    kept = str(kept_and_given_back(api, clock))  # first: it moves the clock past a back-off
    running = str(still_running(api))
    going = str(under_way(api, shard))
    assert set(listed(api, cleanup_status="pending")) == {running, going}
    assert listed(api, cleanup_status="under_way") == [going]
    assert listed(api, cleanup_status="complete") == [kept]
    console.sign_in("viewer")
    page = console.get("/runs?cleanup_status=under_way").text
    assert going in page and running not in page and kept not in page
    assert '<option value="under_way" selected>giving back (ended)</option>' in page
    assert "… giving back — 2 of 2 entries left" in row_of(page, UUID(going))
    refused = api.get("/admin/events/runs", "viewer", params={"cleanup_status": "underway"})
    assert refused.status_code == 422 and "under_way" in refused.text
    described = api.get("/openapi.json", None).json()["paths"]["/admin/events/runs"]["get"]
    [param] = [p for p in described["parameters"] if p["name"] == "cleanup_status"]
    assert "only runs that have ended and are still pending" in param["description"]
    shard.revert_answer = None
    clock.advance(120)
    tick(api.rl)
    assert listed(api, cleanup_status="under_way") == []
    assert listed(api, cleanup_status="pending") == [running]
