"""The run page without a browser, on both stores: a run's status, phases, entries by state and
log; each action through its confirmation and its POST, the outcome, and the API agreeing; every
refusal as a page that says why and changes nothing; names and errors that are markup as text."""

from __future__ import annotations

import re
from datetime import datetime
from html import unescape
from typing import Any
from uuid import UUID, uuid4

import pytest

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.web.routes import run_view
from runledger.application.web.words import when
from tests.support.api_support import (
    DOWN,
    SHARD_SPAWN,
    Api,
    Opener,
    Shard,
    api_fixture,
    shard_fixture,
    shard_run,
    tick,
)
from tests.support.console_support import Console, console_fixture, incomplete_run, text_of
from tests.support.playing import Clock, phase, spec, step

__all__ = ["api_fixture", "console_fixture", "shard_fixture"]

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
MARKUP = "markup.spawn"


@pytest.fixture(name="api_rl")
def api_rl_with_markup_fixture(opened: Opener, shard: Shard, registry: Registry) -> Runledger:
    """api_support's runledger, with a module whose kinds and refs are markup."""

    def perform(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        return {"ok": True, "resources": [{"kind": HOSTILE[0], "ref": HOSTILE[1]}]}

    def revert(resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        return {"ok": False, "error": f"{HOSTILE[0]} and {HOSTILE[1]}"}

    registry.module("markup").action(MARKUP, perform=perform, revert=revert)
    return opened(retry_delays_s=(60.0,), max_revert_attempts=2)


def groups_of(page: str) -> dict[str, str]:
    """Each entry group's markup on the run page, by state, in the page's order."""
    found = re.findall(r'<details class="group" data-state="([^"]+)"(.*?)</details>', page, re.S)
    return dict(found)


def confirmed(
    console: Console, run: UUID, action: str, data: dict[str, str] | None = None
) -> tuple[str, Any]:
    """Open the action's confirm page, then press its button: (what it said, the answer)."""
    asked = console.get(f"/runs/{run}/confirm/{action}")
    assert asked.status_code == 200, asked.text
    answer = console.act(f"/runs/{run}/confirm/{action}", data, from_page=f"/runs/{run}")
    return text_of(asked.text), answer


def outcome_after(console: Console, answer: Any, run: UUID) -> str:
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/runs/{run}"
    page = console.get(f"/runs/{run}").text
    found = re.search(r'<p class="outcome" role="status" data-outcome>(.*?)</p>', page, re.S)
    assert found is not None, text_of(page)
    return unescape(found.group(1))


def buttons(page: str) -> list[str]:
    return re.findall(r'<button type="submit" class="(?:act|danger)">([^<]+)</button>', page)


def two_phases(name: str = "festival") -> dict[str, Any]:
    return spec(
        phase("p1", step("spawn", SHARD_SPAWN, count=2), advance="manual"),
        phase("p2", step("more", SHARD_SPAWN, count=1), advance="manual"),
        name=name,
    )


def test_a_run_waiting_to_advance_says_so_in_the_w2_sentences_with_its_live_entries_and_log(
    console: Console, api: Api
) -> None:
    run = api.start(two_phases())
    tick(api.rl)
    console.sign_in("operator")
    page = console.get(f"/runs/{run}").text
    said = text_of(page)
    assert "Phase p1: steps done, waiting for a person to advance it" in said
    assert (
        "Why this phase has not advanced: its advance rule is manual: a person must advance it"
        in said
    )
    assert "Phase p2: not started (after p1)" in said
    assert 'data-status="running"><span aria-hidden="true">…</span> running' in page
    assert 'data-status="pending"><span aria-hidden="true">…</span> in use' in page
    assert "in use — 2 entries in use by the run" in said and "of 3" not in said
    groups = groups_of(page)
    assert list(groups) == ["live", "superseded"]
    assert groups["live"].count("<tr data-entry=") == 2 and " open>" in groups["live"]
    assert "run started" in said and "step done" in said and "run.started" not in said
    assert 'title="run.started" data-kind="run.started"' in page
    assert buttons(page) == ["Advance", "Cancel with cleanup", "Cancel without cleanup", "Abort"]
    assert f'href="/runs/{run}/replay"' in page


def test_an_incomplete_cleanup_shows_real_attempts_last_errors_and_when_each_is_tried_next(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    stuck = incomplete_run(api, shard, clock)
    shard.revert_answer = DOWN
    retrying = api.start(shard_run(1, name="retrying"))
    tick(api.rl, 2)
    console.sign_in("operator")
    page = console.get(f"/runs/{stuck}").text
    assert 'data-status="incomplete"><span aria-hidden="true">⚠</span> needs a person' in page
    failing = groups_of(page)["failing"]
    assert failing.count("data-attempts>2</td>") == 2
    assert failing.count("the shard is down") == 2
    assert failing.count("none planned") == 2
    assert buttons(page) == ["Retry cleanup", "Keep what is left…"]
    [entry] = api.run(retrying)["entries"][0]["entries"]
    later = console.get(f"/runs/{retrying}").text
    row = groups_of(later)["failing"]
    assert "data-attempts>1</td>" in row and "the shard is down" in row
    assert entry["next_attempt_at"] is not None
    assert when(datetime.fromisoformat(entry["next_attempt_at"])) in text_of(row)
    assert f'href="/entries/{entry["entry_id"]}"' in row


def test_retry_cleanup_confirms_what_it_will_ask_then_gives_everything_back(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    console.sign_in("operator")
    said, answer = confirmed(console, run, "cleanup")
    assert (
        "Retry cleanup of 'festival': ask the modules again for its 2 entries left to give "
        "back, in the name alice." in said
    )
    outcome = outcome_after(console, answer, run)
    assert outcome == "Cleanup retried by alice: 2 given back, 0 failing; cleanup: nothing left."
    assert api.run(run)["run"]["cleanup_status"] == "complete"
    page = console.get(f"/runs/{run}").text
    assert "data-outcome" not in page  # an outcome is shown once
    assert groups_of(page)["reverted"].count("<tr data-entry=") == 2
    assert buttons(page) == []


def test_cancel_without_cleanup_keeps_every_entry_in_the_name_of_the_person(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    console.sign_in("operator")
    said, answer = confirmed(console, run, "keep")
    assert (
        "Cancel 'festival' without cleanup: the run ends now, in the name alice; its 2 entries "
        "left to give back are kept, left in the world in the name alice; nothing is given back."
        in said
    )
    assert outcome_after(console, answer, run) == (
        "Cancelled by alice without cleanup: 2 entries kept in the name alice."
    )
    detail = api.run(run)
    assert (detail["run"]["status"], detail["run"]["ended_by"]) == ("cancelled", "alice")
    kept = groups_of(console.get(f"/runs/{run}").text)["kept"]
    assert kept.count('<td data-label="Kept by" data-kept-by>alice</td>') == 2


def test_cancel_with_cleanup_ends_the_run_and_leaves_the_giving_back_to_the_runner(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    console.sign_in("admin")
    said, answer = confirmed(console, run, "cancel")
    assert (
        "Cancel 'festival' with cleanup: the run ends now, in the name root; the runner gives "
        "back its 2 entries left to give back." in said
    )
    assert outcome_after(console, answer, run) == (
        "Cancelled by root with cleanup: the runner gives back its 2 entries left."
    )
    assert api.run(run)["run"]["status"] == "cancelled"
    tick(api.rl)
    page = console.get(f"/runs/{run}").text
    assert "data-outcome" not in page
    assert api.run(run)["run"]["cleanup_status"] == "complete"
    assert "Ended 2026-12-02" in text_of(page) and "by root" in text_of(page)


def test_advance_says_which_phase_ends_and_which_starts_then_does_it(
    console: Console, api: Api
) -> None:
    run = api.start(two_phases())
    tick(api.rl)
    console.sign_in("operator")
    said, answer = confirmed(console, run, "advance")
    assert "Advance 'festival': end phase p1 and start phase p2, in the name alice." in said
    assert outcome_after(console, answer, run) == (
        "Phase p1 advanced by alice: phase p2 has started."
    )
    phases = api.run(run)["phases"]
    assert phases[0]["headline"] == "Phase p1: done"
    assert phases[1]["headline"].startswith("Phase p2: running steps")


def test_advancing_the_last_phase_completes_the_run(console: Console, api: Api) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    console.sign_in("operator")
    said, answer = confirmed(console, run, "advance")
    assert (
        "Advance 'festival': phase p1 is its last, so the run completes, in the name alice; the "
        "runner then gives back its 2 entries left to give back." in said
    )
    assert outcome_after(console, answer, run) == (
        "Phase p1 advanced by alice: it was the last, so the run completed; "
        "the runner gives back its 2 entries left."
    )
    assert api.run(run)["run"]["status"] == "completed"


def test_abort_needs_a_reason_and_records_it(console: Console, api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    console.sign_in("operator")
    said, blank = confirmed(console, run, "abort", {"reason": "   "})
    assert (
        "Abort 'festival': the run ends now with the reason you give, in the name alice; it has "
        "nothing left to give back so far." in said
    )
    assert blank.status_code == 422
    assert "reason: must not be empty" in text_of(blank.text)
    assert '<textarea id="reason" name="reason" required' in blank.text
    assert api.run(run)["run"]["status"] == "running"
    inline = console.post(
        f"/runs/{run}/confirm/abort",
        {"csrf": console.form_token(f"/runs/{run}"), "reason": "half\x00typed"},
        headers={"HX-Request": "true"},
    )
    assert inline.status_code == 200  # htmx swaps no error answer: the refusal comes in place
    assert (inline.headers["HX-Retarget"], inline.headers["HX-Reswap"]) == ("#confirm", "innerHTML")
    assert "reason: " in inline.text and "half\\x00typed</textarea>" in inline.text
    assert api.run(run)["run"]["status"] == "running"
    answer = console.act(
        f"/runs/{run}/confirm/abort", {"reason": "a storm <b>now</b>"}, from_page=f"/runs/{run}"
    )
    assert outcome_after(console, answer, run) == (
        "Aborted by alice (a storm <b>now</b>): nothing is left to give back."
    )
    detail = api.run(run)["run"]
    assert (detail["status"], detail["end_reason"]) == ("aborted", "a storm <b>now</b>")
    page = console.get(f"/runs/{run}").text
    assert "<q>a storm &lt;b&gt;now&lt;/b&gt;</q>" in page


def test_with_htmx_the_answer_is_the_runs_live_parts_and_the_outcome_in_place(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    console.sign_in("operator")
    htmx = {"HX-Request": "true"}
    inline = console.get(f"/runs/{run}/confirm/cleanup", headers=htmx)
    assert inline.status_code == 200 and "<html" not in inline.text
    assert 'hx-post="/runs/' in inline.text and 'hx-target="#live"' in inline.text
    token = console.form_token(f"/runs/{run}")
    answer = console.post(f"/runs/{run}/confirm/cleanup", {"csrf": token}, headers=htmx)
    assert answer.status_code == 200, answer.text
    assert answer.text.lstrip().startswith('<section id="live"')
    assert '<div id="more" hx-swap-oob="true">' in answer.text
    assert '<div id="confirm" class="slot" aria-live="polite" hx-swap-oob="true">' in answer.text
    assert "Cleanup retried by alice: 2 given back" in answer.text
    assert 'data-status="complete"' in answer.text
    assert api.run(run)["run"]["cleanup_status"] == "complete"


def test_a_poll_that_has_seen_it_all_is_answered_204_and_news_is_answered_in_full(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(1, advance="manual"))
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}").text
    found = re.search(r'hx-get="(/runs/[^"]+/live\?seen=[0-9a-f]+)"', page)
    assert found is not None
    assert console.get(found.group(1)).status_code == 204
    tick(api.rl)
    news = console.get(found.group(1))
    assert news.status_code == 200
    assert "Phase p1: steps done, waiting for a person to advance it" in news.text
    assert '<div id="more" hx-swap-oob="true">' in news.text


def test_advancing_a_finished_run_is_refused_409_naming_why_and_nothing_changes(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(1, advance="manual"))
    api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "rain"})
    before = api.run(run)
    console.sign_in("operator")
    confirm = console.get(f"/runs/{run}/confirm/advance")
    assert "'festival' has already ended (aborted): it cannot be advanced now." in text_of(
        confirm.text
    )
    assert '<form method="post"' not in confirm.text.split("<main", 1)[1]
    answer = console.act(f"/runs/{run}/confirm/advance", from_page=f"/runs/{run}")
    assert answer.status_code == 409
    assert f"Refused, nothing was changed: run {run} has already ended (aborted)" in text_of(
        answer.text
    )
    htmx = console.post(
        f"/runs/{run}/confirm/cancel",
        {"csrf": console.form_token(f"/runs/{run}")},
        headers={"HX-Request": "true"},
    )
    assert htmx.status_code == 200 and 'class="refused" role="alert"' in htmx.text
    assert api.run(run) == before


def test_advancing_a_phase_whose_steps_still_run_is_refused(console: Console, api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    console.sign_in("operator")
    answer = console.act(f"/runs/{run}/confirm/advance", from_page=f"/runs/{run}")
    assert answer.status_code == 409
    assert "Phase p1 has steps still to finish" in text_of(answer.text)
    assert api.run(run)["run"]["status"] == "running"


def test_a_viewer_sees_no_buttons_and_is_refused_the_confirmation_and_the_action(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(1, advance="manual"))
    tick(api.rl)
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}").text
    assert buttons(page) == [] and "/confirm/" not in page
    assert console.get(f"/runs/{run}/confirm/abort").status_code == 403
    answer = console.act(f"/runs/{run}/confirm/abort", {"reason": "x"}, from_page=f"/runs/{run}")
    assert answer.status_code == 403
    said = "only operators and admins act in the console; nothing was done."
    assert f"vera signed in as a viewer: {said}" in text_of(answer.text)
    assert api.run(run)["run"]["status"] == "running"


def test_a_post_without_its_csrf_token_is_refused_and_nothing_changes(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(1, advance="manual"))
    console.sign_in("operator")
    for sent in ({}, {"csrf": "a-token-from-another-session"}):
        answer = console.post(f"/runs/{run}/confirm/abort", {"reason": "storm", **sent})
        assert answer.status_code == 403
        assert "CSRF token is missing or out of date" in answer.text
    assert api.run(run)["run"]["status"] == "running"


def test_an_unknown_run_is_a_404_page_and_a_malformed_id_or_action_names_the_field(
    console: Console,
) -> None:
    console.sign_in("operator")
    unknown = uuid4()
    for path in (f"/runs/{unknown}", f"/runs/{unknown}/log", f"/runs/{unknown}/confirm/advance"):
        answer = console.get(path)
        assert answer.status_code == 404, path
        assert "<h1>Not found</h1>" in answer.text and f"no run {unknown}" in answer.text
    posted = console.act(f"/runs/{unknown}/confirm/cancel")
    assert posted.status_code == 404
    malformed = console.get("/runs/not-a-run")
    assert malformed.status_code == 422 and "run_id: must be an id (a UUID" in malformed.text
    action = console.get(f"/runs/{unknown}/confirm/explode")
    assert action.status_code == 422 and "action: must be" in action.text
    before = console.get(f"/runs/{unknown}/log?before=0")
    assert before.status_code == 422 and "before: must be at least 1" in before.text


def test_the_log_shows_its_last_lines_and_pages_back_without_javascript(
    console: Console, api: Api, shard: Shard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_view, "TAIL", 2)
    shard.revert_answer = DOWN
    run = api.start(shard_run(2))
    tick(api.rl, 2)
    everything = api.get(f"/admin/events/runs/{run}/log", "viewer").json()["items"]
    positions = [line["position"] for line in everything]
    assert len(positions) >= 5
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}").text
    assert re.findall(r'<tr data-position="(\d+)">', page) == [str(p) for p in positions[-2:]]
    assert f"The last 2 of {len(positions)} lines" in text_of(page)
    earlier = f"/runs/{run}/log?before={positions[-2]}"
    assert f'href="{earlier}"' in page
    back = console.get(earlier).text
    assert re.findall(r'<tr data-position="(\d+)">', back) == [str(p) for p in positions[-4:-2]]
    assert f'href="/runs/{run}/log?before={positions[-4]}"' in back
    assert f'href="/runs/{run}/log">Latest lines' in back
    first = console.get(f"/runs/{run}/log?before={positions[1]}").text
    assert re.findall(r'<tr data-position="(\d+)">', first) == [str(positions[0])]
    assert "Earlier lines" not in first
    assert 'data-kind="run.started"' in first and "name</span>: festival" in first


def test_names_kinds_refs_errors_and_reasons_that_are_markup_are_shown_as_text(
    console: Console, api: Api
) -> None:
    run = api.start(spec(phase("p1", step("spawn", MARKUP)), name=HOSTILE[0] + HOSTILE[1]))
    tick(api.rl, 2)
    console.sign_in("operator")
    pages = [console.get(f"/runs/{run}").text, console.get(f"/runs/{run}/log").text]
    pages.append(console.get(f"/runs/{run}/confirm/cleanup").text)
    for page in pages:
        body = page.split("<main", 1)[1]
        assert "<script>alert" not in body and "<img src=x" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body
    failing = groups_of(pages[0])["failing"]
    assert '<td data-label="Kind">&lt;script&gt;alert(1)&lt;/script&gt;</td>' in failing
    assert "&lt;script&gt;alert(1)&lt;/script&gt; and &#34;&gt;&lt;img" in failing
    title = re.search(r"<title>(.*?)</title>", pages[0], re.S)
    assert title is not None and "<script>" not in title.group(1)


def test_a_big_settled_group_starts_folded_and_the_groups_left_to_give_back_open_first(
    console: Console, api: Api, shard: Shard
) -> None:
    shard.revert_answer = DOWN
    failing = api.start(shard_run(1, name="failing"))
    tick(api.rl, 2)
    shard.revert_answer = None
    given_back = api.start(shard_run(run_view.FOLDED + 1, name="many"))
    tick(api.rl, 2)
    console.sign_in("viewer")
    settled = groups_of(console.get(f"/runs/{given_back}").text)
    assert list(settled) == ["reverted", "superseded"]
    assert not settled["reverted"].startswith(" open>")
    assert settled["reverted"].count("<tr data-entry=") == run_view.FOLDED + 1
    assert settled["superseded"].startswith(" open>")
    left = groups_of(console.get(f"/runs/{failing}").text)
    assert list(left) == ["failing", "superseded"] and left["failing"].startswith(" open>")
