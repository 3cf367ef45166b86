"""The definitions (W5) pages without a browser, on both stores: the definitions, a definition
(draft, diff against its latest version, versions, dry runs, occurrences) and the occurrences;
verify, publish, schedule and cancel through their confirmations and POSTs with the API agreeing;
editing the draft; a run's origin on its page; every refusal as a page that says why and changes
nothing; names, reviewers and problems that are markup shown as text."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape
from typing import Any
from uuid import UUID, uuid4

from runledger.application.web.words import when
from tests.support.api_support import (
    SHARD_SPAWN,
    Api,
    api_fixture,
    api_rl_fixture,
    shard_fixture,
    shard_run,
    tick,
)
from tests.support.console_support import Console, console_fixture, text_of
from tests.support.playing import Clock

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
MINUS = "\u2212"
"""The sign a removed line of the diff carries (beside the word)."""
DEFS = "/admin/definitions"


def ghostly() -> dict[str, Any]:
    """A spec whose second step's action no module registers: its dry run has one problem."""
    found = shard_run(2)
    found["phases"][0]["steps"].append({"id": "ghost", "action": "nobody.home"})
    return found


def published(api: Api, name: str = "fair", count: int = 2) -> None:
    """Created by ann, verified by rita, published by paul."""
    api.rl.definitions.create(name, shard_run(count), "ann")
    api.rl.definitions.verify(name, "rita")
    api.rl.definitions.publish(name, "paul")


def scheduled(api: Api, name: str = "fair", after_s: float = 3600) -> UUID:
    return api.rl.occurrences.schedule(name, api.rl.clock() + timedelta(seconds=after_s), "sam").id


def confirmed(
    console: Console, path: str, data: dict[str, str] | None = None, back: str = "/definitions"
) -> tuple[str, Any]:
    """Open the confirm page at ``path``, then press its button: (what it said, the answer)."""
    asked = console.get(path + (f"?at={data['at']}" if data and "at" in data else ""))
    assert asked.status_code == 200, asked.text
    return text_of(asked.text), console.act(path, data, from_page=back)


def outcome_after(console: Console, answer: Any, name: str = "fair") -> str:
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/definitions/{name}"
    page = console.get(f"/definitions/{name}").text
    said = r'<p class="(?:outcome|refused)" role="\w+" data-outcome="\w+">(.*?)</p>'
    found = re.search(said, page)
    assert found is not None, text_of(page)
    return unescape(found.group(1))


def row(page: str, attribute: str, key: str) -> str:
    found = re.search(rf'<tr {attribute}="{re.escape(key)}"[^>]*>(.*?)</tr>', page, re.S)
    assert found is not None, f"no row {attribute}={key}"
    return text_of(found.group(1))


def buttons(page: str) -> list[str]:
    return re.findall(r'<button type="submit" class="(?:act|danger)"[^>]*>([^<]+)</button>', page)


def test_the_definitions_page_lists_each_draft_s_state_latest_version_and_next_occurrence(
    console: Console, api: Api, clock: Clock
) -> None:
    published(api)
    stamp = api.rl.definitions.get("fair").latest
    assert stamp is not None and stamp.verified is not None
    first = scheduled(api, after_s=7200)
    scheduled(api, after_s=86_400)
    api.rl.definitions.create("harvest", ghostly(), "ann")
    clock.advance(30)
    api.rl.definitions.verify("harvest", "rita")
    console.sign_in("viewer")
    page = console.get("/definitions").text
    assert '<a href="/definitions">Definitions</a>' in page
    fair = row(page, "data-definition", "fair")
    verified_at = when(stamp.verified.at)
    assert f"✓ verified by rita at {verified_at} revision 1, created by ann" in fair
    assert f"version 1: ✓ verified by rita at {verified_at}" in fair
    due = api.rl.occurrences.get(first).due_at
    assert f"{when(due)} version 1, ✓ verified by rita" in fair
    harvest = row(page, "data-definition", "harvest")
    assert "⚠ unverified revision 1, created by ann" in harvest
    assert "its last dry run found problems: 2026-12-02 12:00:30 UTC" in harvest
    assert "none published" in harvest and "none scheduled" in harvest
    assert re.findall(r'<tr data-definition="([^"]+)"', page) == ["fair", "harvest"]
    polled = console.get("/definitions", headers={"HX-Request": "true"}).text
    assert polled.strip().startswith('<div id="definitions"') and "<main" not in polled


def test_a_definition_page_shows_its_draft_versions_dry_runs_and_occurrences(
    console: Console, api: Api, clock: Clock
) -> None:
    published(api)
    clock.advance(60)
    api.rl.definitions.edit("fair", ghostly(), "ann")
    api.rl.definitions.verify("fair", "rita")
    waiting = scheduled(api)
    console.sign_in("viewer")
    answer = console.get("/definitions/fair")
    assert answer.status_code == 200
    page, said = answer.text, text_of(answer.text)
    assert "Draft ⚠ unverified revision 2, edited by ann at 2026-12-02 12:01:00 UTC" in said
    detail = api.get(f"{DEFS}/fair", "viewer").json()
    assert f"fingerprint {detail['fingerprint'][:12]}" in said
    assert "Latest version version 1: ✓ verified by rita" in said
    assert "1 scheduled, not yet started" in said
    assert "&#34;action&#34;: &#34;nobody.home&#34;" in page  # the draft's JSON, escaped
    assert row(page, "data-version", "1").startswith("version 1 ✓ verified by rita")
    newest, oldest = row(page, "data-dry-run", "2"), row(page, "data-dry-run", "1")
    assert "⚠ 1 problem" in newest and "revision 2" in newest
    assert 'step ghost (phase p1): phases.0.steps.1.action: no module registers "nobody.home"' in (
        newest
    )
    assert "✓ passed" in oldest and "rita" in oldest and "none" in oldest
    assert page.index('data-dry-run="2"') < page.index('data-dry-run="1"')
    occurrence = row(page, "data-occurrence", str(waiting))
    assert "version 1 ✓ verified by rita" in occurrence and "… scheduled by sam" in occurrence
    assert buttons(page) == []
    by_id = console.get(f"/definitions/{detail['definition_id']}")
    assert by_id.status_code == 303 and by_id.headers["location"] == "/definitions/fair"


def test_the_diff_marks_each_added_and_removed_line_by_sign_and_word(
    console: Console, api: Api
) -> None:
    published(api, count=2)
    console.sign_in("viewer")
    same = console.get("/definitions/fair").text
    assert 'data-diff="same"' in same and "The draft is the same as version 1" in text_of(same)
    changed = shard_run(5, name="festival <b>")
    api.rl.definitions.edit("fair", changed, "ann")
    page = console.get("/definitions/fair").text
    lines = re.findall(r'<li class="line-(\w+)" data-line="\w+">(.*?)</li>', page)
    marked = [(kind, text_of(html)) for kind, html in lines if kind != "same"]
    assert marked == [
        ("removed", f'{MINUS} removed "name": "festival",'),
        ("added", '+ added "name": "festival <b>",'),
        ("removed", f'{MINUS} removed "count": 2'),
        ("added", '+ added "count": 5'),
    ]
    assert "<b>" not in page.split('data-diff="changed"')[1]
    assert "2 added in the draft" in text_of(page) and "2 removed from version 1" in text_of(page)
    api.rl.definitions.create("new", shard_run(), "ann")
    fresh = console.get("/definitions/new").text
    assert 'data-diff="new"' in fresh and "the whole draft is new" in text_of(fresh)


def test_verify_confirms_what_it_checks_then_records_a_passing_dry_run_the_api_agrees(
    console: Console, api: Api
) -> None:
    api.rl.definitions.create("fair", shard_run(2), "ann")
    console.sign_in("operator")
    page = console.get("/definitions/fair").text
    assert buttons(page) == ["Verify…", "Publish…"]
    fingerprint = api.get(f"{DEFS}/fair", "viewer").json()["fingerprint"]
    said, answer = confirmed(console, "/definitions/fair/confirm/verify")
    assert (
        f"Verify 'fair': a dry run of its draft (revision 1, fingerprint {fingerprint[:12]}) "
        "against the modules loaded here and the live runners'; nothing is performed" in said
    )
    assert "recorded in the name alice, passed or not" in said
    outcome = outcome_after(console, answer)
    assert outcome.startswith("Dry run 1 by alice at 2026-12-02 12:00:00 UTC passed")
    assert f"fingerprint {fingerprint[:12]}" in outcome
    detail = api.get(f"{DEFS}/fair", "viewer").json()
    assert [(d["by"], d["passed"]) for d in detail["dry_runs"]] == [("alice", True)]
    assert detail["draft_verified"]["by"] == "alice"
    again = console.get("/definitions/fair").text
    assert 'data-outcome="done"' not in again  # an outcome is shown once


def test_verify_with_problems_names_the_step_and_field_and_verifies_nothing(
    console: Console, api: Api
) -> None:
    api.rl.definitions.create("fair", ghostly(), "ann")
    console.sign_in("operator")
    _, answer = confirmed(console, "/definitions/fair/confirm/verify")
    outcome = outcome_after(console, answer)
    assert outcome.startswith("Dry run 1 by alice")
    assert outcome.endswith(
        "found 1 problem, so the draft is not verified: step ghost: phases.0.steps.1.action: "
        'no module registers "nobody.home".'
    )
    page = console.get("/definitions/fair").text
    assert "⚠ 1 problem" in row(page, "data-dry-run", "1")
    assert api.get(f"{DEFS}/fair", "viewer").json()["draft_verified"] is None


def test_publish_says_whether_it_will_be_verified_and_how_many_occurrences_it_repins(
    console: Console, api: Api, clock: Clock
) -> None:
    published(api)
    waiting = [scheduled(api), scheduled(api, after_s=7200)]
    clock.advance(60)
    api.rl.definitions.edit("fair", shard_run(3), "ann")
    console.sign_in("operator")
    said = text_of(console.get("/definitions/fair/confirm/publish").text)
    assert (
        "Publish 'fair' as version 2, in the name alice: it will be published UNVERIFIED, "
        "stamped by no one: no dry run has passed on this draft since its last edit "
        "(revision 2, by ann at 2026-12-02 12:01:00 UTC)" in said
    )
    assert (
        "2 scheduled occurrences not yet started will be re-pinned to version 2 and marked "
        "unverified" in said
    )
    clock.advance(60)
    api.rl.definitions.verify("fair", "rita")
    said, answer = confirmed(console, "/definitions/fair/confirm/publish")
    assert (
        "it will be VERIFIED by rita at 2026-12-02 12:02:00 UTC (the dry run that passed on "
        "this very draft)" in said
    )
    assert "marked verified by rita at 2026-12-02 12:02:00 UTC" in said
    outcome = outcome_after(console, answer)
    assert outcome == (
        "fair version 2 published verified by rita at 2026-12-02 12:02:00 UTC; "
        "2 scheduled occurrence(s) re-pinned to it"
    )
    listed = api.get(f"{DEFS}/fair/occurrences", "viewer").json()["items"]
    assert [(o["occurrence_id"], o["version"], o["verified"]["by"]) for o in listed] == [
        (str(w), 2, "rita") for w in waiting
    ]
    versions = api.get(f"{DEFS}/fair/versions", "viewer").json()["items"]
    assert versions[-1]["published_by"] == "alice"
    page = console.get("/definitions/fair").text
    assert "version 2 ✓ verified by rita" in row(page, "data-occurrence", str(waiting[0]))


def test_schedule_confirms_the_time_and_pinned_version_then_lists_the_occurrence(
    console: Console, api: Api
) -> None:
    published(api)
    console.sign_in("operator")
    page = console.get("/definitions/fair").text
    assert '<label for="at">Schedule an occurrence at (UTC)</label>' in page
    assert 'type="datetime-local" name="at" value="2026-12-02T12:00"' in page
    said, answer = confirmed(
        console, "/definitions/fair/confirm/schedule", {"at": "2026-12-24T18:00"}
    )
    assert (
        "Schedule 'fair' at 2026-12-24 18:00:00 UTC, pinned to its latest version 1 "
        "(verified by rita at 2026-12-02 12:00:00 UTC), in the name alice" in said
    )
    outcome = outcome_after(console, answer)
    assert outcome.startswith("Scheduled 'fair' at 2026-12-24 18:00:00 UTC by alice: occurrence")
    assert outcome.endswith("pinned to version 1 (verified by rita at 2026-12-02 12:00:00 UTC).")
    [listed] = api.get("/admin/occurrences", "viewer").json()["items"]
    assert (listed["due_at"], listed["scheduled_by"], listed["version"]) == (
        "2026-12-24T18:00:00Z",
        "alice",
        1,
    )
    occurrences = console.get("/occurrences").text
    shown = row(occurrences, "data-occurrence", listed["occurrence_id"])
    assert shown.startswith("fair 2026-12-24 18:00:00 UTC")
    assert "version 1 ✓ verified by rita" in shown and "… scheduled by alice" in shown


def test_a_schedule_time_that_is_not_a_time_or_is_past_is_refused_naming_the_field(
    console: Console, api: Api
) -> None:
    published(api)
    console.sign_in("operator")
    asked = console.get("/definitions/fair/confirm/schedule?at=tomorrow")
    assert asked.status_code == 422
    assert "at: 'tomorrow' is not a time like 2026-12-24T18:00 (UTC)" in text_of(asked.text)
    assert 'name="at" value="tomorrow"' in asked.text  # the picker again, with what was typed
    past = console.act(
        "/definitions/fair/confirm/schedule", {"at": "2001-01-01T00:00"}, from_page="/definitions"
    )
    assert past.status_code == 422
    assert "at: 2001-01-01 00:00:00 UTC is in the past" in text_of(past.text)
    empty = console.act("/definitions/fair/confirm/schedule", {"at": ""}, "/definitions")
    assert empty.status_code == 422 and "at: a time is needed" in text_of(empty.text)
    inline = console.post(
        "/definitions/fair/confirm/schedule",
        {"at": "2001-01-01T00:00", "csrf": console.form_token("/definitions")},
        headers={"HX-Request": "true"},
    )  # htmx swaps no error answer: the refusal comes as 200, into the confirmation's place
    assert (inline.status_code, inline.headers["HX-Retarget"]) == (200, "#confirm")
    assert "at: 2001-01-01 00:00:00 UTC is in the past" in inline.text
    assert api.get("/admin/occurrences", "viewer").json()["items"] == []
    api.rl.definitions.create("draft-only", shard_run(), "ann")
    early = console.get("/definitions/draft-only/confirm/schedule?at=2026-12-24T18:00")
    said = text_of(early.text)
    assert "'draft-only' has no published version to schedule: publish it first" in said
    assert "Nothing will change" in said
    refused = console.act(
        "/definitions/draft-only/confirm/schedule", {"at": "2026-12-24T18:00"}, "/definitions"
    )
    assert refused.status_code == 409 and "no published version" in text_of(refused.text)


def test_cancel_confirms_which_occurrence_then_it_will_not_start(
    console: Console, api: Api
) -> None:
    published(api)
    occurrence = scheduled(api)
    console.sign_in("operator")
    page = console.get("/definitions/fair").text
    assert buttons(page) == ["Verify…", "Publish…", "Schedule…", "Cancel…"]
    path = f"/occurrences/{occurrence}/confirm/cancel"
    said, answer = confirmed(console, path)
    assert (
        "Cancel the occurrence of 'fair' due at 2026-12-02 13:00:00 UTC (version 1, verified "
        "by rita at 2026-12-02 12:00:00 UTC), in the name alice: it will not start" in said
    )
    outcome = outcome_after(console, answer)
    assert outcome == (
        "Cancelled by alice: the occurrence of 'fair' due at 2026-12-02 13:00:00 UTC will "
        "not start."
    )
    found = api.get(f"/admin/occurrences/{occurrence}", "viewer").json()
    assert (found["state"], found["cancelled_by"]) == ("cancelled", "alice")
    again = text_of(console.get(path).text)
    assert "was cancelled by alice at 2026-12-02 12:00:00 UTC" in again
    assert "Nothing will change" in again
    twice = console.act(path, {}, "/definitions")
    assert twice.status_code == 409
    assert "Refused, nothing was changed" in text_of(twice.text)
    page = console.get("/definitions/fair").text
    assert "· cancelled by alice" in row(page, "data-occurrence", str(occurrence))
    assert buttons(page) == ["Verify…", "Publish…", "Schedule…"]


def test_the_occurrences_page_lists_every_state_with_its_run_and_filters(
    console: Console, api: Api, clock: Clock
) -> None:
    published(api)
    started = scheduled(api, after_s=0)
    cancelled = scheduled(api, after_s=60)
    api.rl.occurrences.cancel(cancelled, "sam")
    waiting = scheduled(api, after_s=3600)
    tick(api.rl)
    run_id = api.get(f"/admin/occurrences/{started}", "viewer").json()["run_id"]
    console.sign_in("viewer")
    page = console.get("/occurrences").text
    assert re.findall(r'<tr data-occurrence="([^"]+)" data-state="(\w+)"', page) == [
        (str(started), "started"),
        (str(cancelled), "cancelled"),
        (str(waiting), "scheduled"),
    ]
    assert f'as <a href="/runs/{run_id}">run {run_id.split("-")[0]}</a> by w1' in page
    assert "✓ cancelled by sam" not in page and "· cancelled by sam" in row(
        page, "data-occurrence", str(cancelled)
    )
    only = console.get("/occurrences?state=scheduled").text
    assert re.findall(r'<tr data-occurrence="([^"]+)"', only) == [str(waiting)]
    bad = console.get("/occurrences?state=done")
    assert bad.status_code == 422 and "state: 'done' is not one of" in text_of(bad.text)
    unknown = console.get("/occurrences?definition=nothing")
    assert unknown.status_code == 404 and "no definition named nothing" in text_of(unknown.text)
    polled = console.get("/occurrences?definition=fair", headers={"HX-Request": "true"}).text
    assert polled.strip().startswith('<div id="occurrences" hx-get="/occurrences?definition=fair"')


def test_the_run_page_says_which_definition_version_a_run_came_from_and_its_stamp(
    console: Console, api: Api, clock: Clock
) -> None:
    published(api)
    stamped = scheduled(api, after_s=0)
    api.rl.definitions.edit("fair", shard_run(3), "ann")
    api.rl.definitions.publish("fair", "paul")
    api.rl.definitions.create("plain", shard_run(), "ann")
    api.rl.definitions.publish("plain", "paul")
    unstamped = scheduled(api, "plain", after_s=0)
    by_hand = api.start(shard_run(1, name="by hand"))
    tick(api.rl)
    console.sign_in("viewer")
    runs = {
        o: api.get(f"/admin/occurrences/{o}", "viewer").json()["run_id"]
        for o in (stamped, unstamped)
    }
    repinned = text_of(console.get(f"/runs/{runs[stamped]}").text)
    assert "From definition fair version 2: ⚠ unverified (occurrence" in repinned
    plain = console.get(f"/runs/{runs[unstamped]}").text
    assert "From definition plain version 1: ⚠ unverified" in text_of(plain)
    assert '<a href="/definitions/plain">plain</a>' in plain
    assert "From definition" not in console.get(f"/runs/{by_hand}").text
    api.rl.definitions.verify("fair", "rita")
    api.rl.definitions.publish("fair", "paul")
    verified = scheduled(api, after_s=0)
    tick(api.rl)
    run = api.get(f"/admin/occurrences/{verified}", "viewer").json()["run_id"]
    assert (
        "From definition fair version 3: ✓ verified by rita at 2026-12-02 12:00:00 UTC"
        in text_of(console.get(f"/runs/{run}").text)
    )


def test_editing_the_draft_in_the_browser_names_the_field_it_refuses_and_keeps_the_text(
    console: Console, api: Api
) -> None:
    published(api)
    console.sign_in("operator")
    form = console.get("/definitions/fair/draft")
    assert form.status_code == 200
    assert '<label for="spec">The draft\'s spec (JSON)</label>' in form.text
    assert "&#34;count&#34;: 2" in form.text and 'name="revision" value="1"' in form.text
    bad = '{"name": "x", "phases": [{"id": "p", "steps": [{"id": "no spaces", "action": "a"}]}]}'
    refused = console.act("/definitions/fair/draft", {"spec": bad, "revision": "1"}, "/definitions")
    assert refused.status_code == 422
    assert "spec.phases.0.steps.0.id: must be a letter or digit" in text_of(refused.text)
    assert "&#34;no spaces&#34;" in refused.text  # what was typed, kept in the text area
    broken = console.act("/definitions/fair/draft", {"spec": "{", "revision": "1"}, "/definitions")
    assert broken.status_code == 422 and "spec: the spec is not valid JSON" in text_of(broken.text)
    assert api.get(f"{DEFS}/fair", "viewer").json()["revision"] == 1
    edited = shard_run(4)
    edited["phases"][0]["steps"][0]["action"] = SHARD_SPAWN
    saved = console.act(
        "/definitions/fair/draft", {"spec": json.dumps(edited), "revision": "1"}, "/definitions"
    )
    outcome = outcome_after(console, saved)
    assert outcome.startswith("Draft edited by alice: revision 2, fingerprint")
    detail = api.get(f"{DEFS}/fair", "viewer").json()
    assert (detail["revision"], detail["edited_by"], detail["draft_verified"]) == (2, "alice", None)
    late = {"spec": json.dumps(shard_run(9)), "revision": "1"}
    stale = console.act("/definitions/fair/draft", late, "/definitions")
    assert stale.status_code == 409
    assert "revision: the draft changed since you opened it" in text_of(stale.text)
    assert api.get(f"{DEFS}/fair", "viewer").json()["revision"] == 2


def test_viewers_see_no_buttons_and_every_action_refuses_them(console: Console, api: Api) -> None:
    published(api)
    occurrence = scheduled(api)
    console.sign_in("viewer")
    page = console.get("/definitions/fair").text
    assert buttons(page) == [] and "Edit the draft" not in page and 'name="at"' not in page
    for path in (
        "/definitions/fair/confirm/verify",
        "/definitions/fair/confirm/publish",
        "/definitions/fair/confirm/schedule?at=2026-12-24T18:00",
        f"/occurrences/{occurrence}/confirm/cancel",
        "/definitions/fair/draft",
    ):
        asked = console.get(path)
        assert asked.status_code == 403, path
        assert "vera signed in as a viewer: only operators act on definitions" in asked.text
    for path, data in (
        ("/definitions/fair/confirm/verify", {}),
        ("/definitions/fair/confirm/publish", {}),
        ("/definitions/fair/confirm/schedule", {"at": "2026-12-24T18:00"}),
        (f"/occurrences/{occurrence}/confirm/cancel", {}),
        ("/definitions/fair/draft", {"spec": "{}", "revision": "1"}),
    ):
        assert console.act(path, data, "/definitions").status_code == 403, path
    detail = api.get(f"{DEFS}/fair", "viewer").json()
    assert (len(detail["dry_runs"]), len(detail["versions"]), detail["revision"]) == (1, 1, 1)
    listed = api.get("/admin/occurrences", "viewer").json()["items"]
    assert [o["state"] for o in listed] == ["scheduled"]


def test_a_form_without_its_csrf_token_does_nothing_and_says_why(
    console: Console, api: Api
) -> None:
    published(api)
    occurrence = scheduled(api)
    console.sign_in("operator")
    for path, data in (
        ("/definitions/fair/confirm/verify", {}),
        ("/definitions/fair/confirm/publish", {"csrf": "forged"}),
        ("/definitions/fair/confirm/schedule", {"at": "2026-12-24T18:00"}),
        (f"/occurrences/{occurrence}/confirm/cancel", {}),
        ("/definitions/fair/draft", {"spec": "{}", "revision": "1"}),
    ):
        answer = console.post(path, data)
        assert answer.status_code == 403, path
        assert "CSRF token is missing or out of date" in answer.text
    detail = api.get(f"{DEFS}/fair", "viewer").json()
    assert (len(detail["dry_runs"]), len(detail["versions"])) == (1, 1)
    listed = api.get("/admin/occurrences", "viewer").json()["items"]
    assert [o["state"] for o in listed] == ["scheduled"]


def test_an_unknown_definition_or_occurrence_is_a_404_page(console: Console, api: Api) -> None:
    console.sign_in("operator")
    for path in (
        "/definitions/nothing",
        "/definitions/no%20such%20name",
        f"/definitions/{uuid4()}",
        "/definitions/nothing/confirm/verify",
        "/definitions/nothing/draft",
        "/definitions/nothing/occurrences",
        f"/occurrences/{uuid4()}/confirm/cancel",
    ):
        answer = console.get(path)
        assert answer.status_code == 404, path
        assert "<h1>Not found</h1>" in answer.text
    assert "no definition named nothing" in text_of(console.get("/definitions/nothing").text)
    posted = console.act("/definitions/nothing/confirm/publish", {}, "/definitions")
    assert posted.status_code == 404
    assert api.get(DEFS, "viewer").json()["items"] == []


def test_names_reviewers_and_problems_that_are_markup_are_shown_as_text(
    console: Console, api: Api
) -> None:
    hostile = shard_run(2, name=HOSTILE[1])
    hostile["phases"][0]["steps"].append({"id": "odd", "action": HOSTILE[0]})
    api.rl.definitions.create("fair", shard_run(2), HOSTILE[0])
    api.rl.definitions.verify("fair", HOSTILE[1])
    api.rl.definitions.publish("fair", HOSTILE[0])
    occurrence = api.rl.occurrences.schedule("fair", api.rl.clock(), HOSTILE[1]).id
    api.rl.occurrences.cancel(occurrence, HOSTILE[0])
    scheduled(api)
    api.rl.definitions.edit("fair", hostile, HOSTILE[1])
    api.rl.definitions.verify("fair", HOSTILE[0])
    console.sign_in("operator")
    for path in (
        "/definitions",
        "/definitions/fair",
        "/occurrences",
        "/definitions/fair/confirm/publish",
        "/definitions/fair/draft",
    ):
        answer = console.get(path)
        assert answer.status_code == 200, path
        assert "<script>alert" not in answer.text and "<img src=x" not in answer.text, path
        assert "alert(1)" in text_of(answer.text), path
    page = console.get("/definitions/fair").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    problem = row(page, "data-dry-run", "2")
    assert f'step odd (phase p1): phases.0.steps.1.action: no module registers "{HOSTILE[0]}"' in (
        problem
    )
