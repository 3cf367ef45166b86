"""A person decides, over the HTTP API and at the console, on an SQLite file and on PostgreSQL:
keep one entry or what is left with a reason, retry one entry; operators only (viewers get 403
and see no buttons); each answer and log line says who and why; a refusal writes nothing. The
game's own values are the world.
"""

from __future__ import annotations

import re
from uuid import UUID, uuid4

from runledger.application.runledger import Runledger
from tests.application.test_decisions import WHY, drifted, leases
from tests.support.api_support import Api, api_fixture, api_rl_fixture, shard_fixture
from tests.support.console_support import Console, console_fixture, text_of
from tests.support.playing import Clock, lease_step, phase, spec
from tests.support.reading import lines, status, tick, written
from tests.support.world import World

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]


def runs(run: UUID) -> str:
    return f"/admin/events/runs/{run}"


def holding_north(rl: Runledger, clock: Clock) -> UUID:
    clock.advance(60)
    holder = rl.runs.start(
        spec(phase("p1", lease_step("fog", "north", "fog"), advance="manual"), name="fog")
    )
    tick(rl)
    return holder


# --- the API -------------------------------------------------------------------------------------


def test_an_operator_keeps_each_drifted_entry_and_the_run_no_longer_needs_a_person(
    api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    found = leases(api.rl, run)
    north, east = found["north"], found["east"]
    answer = api.post(
        f"{runs(run)}/entries/{north.entry_id}/keep", "operator", json={"reason": WHY}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "run_id": str(run),
        "by": "alice",
        "reason": WHY,
        "kept": [{"entry_id": str(north.entry_id), "name": north.name}],
        "cleanup_status": "incomplete",
        "remaining": 1,
    }
    shown = api.get(f"/admin/entries/{north.entry_id}", "viewer").json()
    assert (shown["state"], shown["kept_by"], shown["kept_reason"]) == ("kept", "alice", WHY)
    answer = api.post(f"{runs(run)}/entries/{east.entry_id}/keep", "admin", json={"reason": "ok"})
    assert answer.json()["cleanup_status"] == "complete"
    assert api.run(run)["run"]["cleanup_status"] == "complete"
    assert game.values == {"north": "hail", "east": "sleet"}
    logged = api.get(f"{runs(run)}/log", "viewer").json()["items"]
    assert [(x["kind"], x["detail"]) for x in logged if x["kind"] == "cleanup.kept_one"] == [
        ("cleanup.kept_one", {"by": "alice", "reason": WHY, "entry": north.name}),
        ("cleanup.kept_one", {"by": "root", "reason": "ok", "entry": east.name}),
    ]


def test_an_operator_keeps_what_is_left_in_one_act(api: Api, game: World, clock: Clock) -> None:
    run = drifted(api.rl, game)
    answer = api.post(f"{runs(run)}/keep", "operator", json={"reason": WHY})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert (found["by"], found["reason"], found["cleanup_status"], found["remaining"]) == (
        "alice",
        WHY,
        "complete",
        0,
    )
    assert sorted(k["name"] for k in found["kept"]) == sorted(
        e.name for e in leases(api.rl, run).values()
    )
    [line] = lines(api.rl, run, "cleanup.kept_rest")
    assert line.detail == {"by": "alice", "reason": WHY, "resources": 2}
    again = api.post(f"{runs(run)}/keep", "operator", json={"reason": WHY})
    assert again.status_code == 409 and "nothing left to keep" in again.json()["detail"]


def test_retrying_one_entry_gives_it_back_and_a_held_lease_is_left_with_the_sentence(
    api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    found = leases(api.rl, run)
    game.values["east"] = "storm"  # the game master gives east back to the run
    answer = api.post(f"{runs(run)}/entries/{found['east'].entry_id}/retry", "operator")
    assert answer.status_code == 200, answer.text
    done = answer.json()
    assert (done["state"], done["attempted"], done["reverted"], done["held"]) == (
        "reverted",
        1,
        1,
        [],
    )
    assert game.values == {"north": "hail", "east": "clear"}
    holder = holding_north(api.rl, clock)
    restores = len(game.restore_calls)
    answer = api.post(
        f"{runs(run)}/entries/{found['north'].entry_id}/retry",
        "operator",
        json={"reason": "is it ours?"},
    )
    assert answer.status_code == 200, answer.text
    [held] = answer.json()["held"]
    said = f"north is held by run {holder} until 2026-12-02 13:01:00 UTC: not restored"
    assert (held["holder"], held["said"]) == (str(holder), said)
    assert (answer.json()["state"], answer.json()["attempted"]) == ("drifted", 0)
    assert game.values == {"north": "fog", "east": "clear"} and len(game.restore_calls) == restores
    assert [line.detail for line in lines(api.rl, run, "cleanup.retry_one")] == [
        {"by": "alice", "entry": found["east"].name},
        {"by": "alice", "reason": "is it ours?", "entry": found["north"].name, "held": said},
    ]


def test_a_keep_repeated_under_one_idempotency_key_answers_the_first_answer(
    api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    path = f"{runs(run)}/entries/{north.entry_id}/keep"
    headers = api.headers("operator") | {"Idempotency-Key": "keep-north-once"}
    first = api.client.post(path, headers=headers, json={"reason": WHY})
    assert first.status_code == 200, first.text
    before = written(api.rl)
    again = api.client.post(path, headers=headers, json={"reason": WHY})
    assert (again.status_code, again.content) == (200, first.content)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert written(api.rl) == before
    other = api.client.post(path, headers=headers, json={"reason": "another"})
    assert other.status_code == 409
    assert len(lines(api.rl, run, "cleanup.kept_one")) == 1


def test_a_viewer_may_not_keep_or_retry_and_nothing_is_written(
    api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    before = written(api.rl)
    for path, body in (
        (f"{runs(run)}/entries/{north.entry_id}/keep", {"reason": WHY}),
        (f"{runs(run)}/entries/{north.entry_id}/retry", None),
        (f"{runs(run)}/keep", {"reason": WHY}),
    ):
        answer = api.post(path, "viewer", json=body)
        assert answer.status_code == 403, answer.text
        assert answer.json()["detail"].startswith("vera is a viewer; this needs")
        assert api.post(path, None, json=body).status_code == 401
    assert written(api.rl) == before
    assert status(api.rl, run) == "incomplete"


def test_refusals_name_the_run_the_entry_or_the_field_and_write_nothing(
    api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    api.post(f"{runs(run)}/entries/{north.entry_id}/keep", "operator", json={"reason": WHY})
    going = api.rl.runs.start(spec(phase("p1", lease_step("w", "west"), advance="manual")))
    tick(api.rl)
    west = leases(api.rl, going)["west"]
    before = written(api.rl)
    keep_north = f"{runs(run)}/entries/{north.entry_id}/keep"
    cases = [
        (keep_north, {"reason": WHY}, 409, f"{north.name} is already kept"),
        (f"{runs(run)}/entries/{north.entry_id}/retry", None, 409, "is already kept"),
        (
            f"{runs(going)}/entries/{west.entry_id}/keep",
            {"reason": WHY},
            409,
            f"run festival ({going}) is still running",
        ),
        (f"{runs(going)}/keep", {"reason": WHY}, 409, "is still running"),
        (f"{runs(run)}/entries/{uuid4()}/keep", {"reason": WHY}, 404, f"run {run} has no entry"),
        (f"{runs(uuid4())}/keep", {"reason": WHY}, 404, "no run"),
    ]
    for path, body, code, said in cases:
        answer = api.post(path, "operator", json=body)
        assert answer.status_code == code, (path, answer.text)
        assert said in answer.json()["detail"], (path, answer.text)
    east = leases(api.rl, run)["east"]
    keep_east = f"{runs(run)}/entries/{east.entry_id}/keep"
    for body in (
        {},
        {"reason": ""},
        {"reason": "   "},
        {"reason": "a\x00b"},
        {"reason": "x" * 10_001},
        {"reason": WHY, "by": "mallory"},
    ):
        answer = api.post(keep_east, "operator", json=body)
        assert answer.status_code == 422, (body, answer.text)
        [problem] = answer.json()["detail"]
        assert problem["loc"][:2] in (["body", "reason"], ["body", "by"]), (body, problem)
    assert written(api.rl) == before
    assert status(api.rl, run) == "incomplete"


# --- the console ---------------------------------------------------------------------------------


def decide_buttons(page: str) -> list[str]:
    return re.findall(r'<button type="submit"[^>]*>((?:Keep|Retry)[^<]*)</button>', page)


def test_keeping_an_entry_from_its_page_confirms_what_will_happen_then_does_it(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    console.sign_in("operator")
    page = console.get(f"/entries/{north.entry_id}").text
    assert decide_buttons(page) == ["Keep…", "Retry this entry"]
    asked = console.get(f"/entries/{north.entry_id}/keep")
    assert asked.status_code == 200, asked.text
    assert (
        f"Keep {north.name} of 'storms' as it stands in the world, in the name alice, with the "
        "reason you give: nothing is given back, and the entry is no longer asked for. 'storms' "
        "then has 1 entry left to give back."
    ) in text_of(asked.text)
    token = console.form_token(f"/entries/{north.entry_id}/keep")
    refused = console.post(f"/entries/{north.entry_id}/keep", {"csrf": token, "reason": " "})
    assert refused.status_code == 422 and "reason: must not be empty" in text_of(refused.text)
    assert status(api.rl, run) == "incomplete"
    done = console.post(f"/entries/{north.entry_id}/keep", {"csrf": token, "reason": WHY})
    assert done.status_code == 303 and done.headers["location"] == f"/entries/{north.entry_id}"
    entry_page = console.get(f"/entries/{north.entry_id}").text
    said = f"Kept {north.name} in the name alice ({WHY}): 1 entry left to give back."
    assert said in text_of(entry_page)
    assert f"Kept by alice because: {WHY}" in text_of(entry_page)
    assert said not in text_of(console.get(f"/entries/{north.entry_id}").text), "shown once"
    assert decide_buttons(entry_page) == []
    again = console.post(f"/entries/{north.entry_id}/keep", {"csrf": token, "reason": WHY})
    assert again.status_code == 409 and "is already kept" in text_of(again.text)


def test_keep_what_is_left_and_retry_from_the_run_s_page(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    found = leases(api.rl, run)
    console.sign_in("operator")
    page = console.get(f"/runs/{run}").text
    assert "Keep what is left…" in decide_buttons(page)
    assert 'data-decide-group="drifted"' in page
    chosen = console.get(
        f"/runs/{run}/decide", params={"entry": str(found["east"].entry_id), "act": "retry"}
    )
    assert chosen.status_code == 303
    assert chosen.headers["location"] == f"/entries/{found['east'].entry_id}/retry?back=run"
    game.values["east"] = "storm"
    asked_retry = console.get(chosen.headers["location"]).text
    assert '<input type="hidden" name="back" value="run">' in asked_retry
    token = console.form_token(chosen.headers["location"])
    retry = f"/entries/{found['east'].entry_id}/retry"
    done = console.post(retry, {"csrf": token, "reason": "", "back": "run"})
    assert done.status_code == 303 and done.headers["location"] == f"/runs/{run}"
    assert game.values == {"north": "hail", "east": "clear"}
    shown = text_of(console.get(f"/runs/{run}").text)
    assert f"Retried {found['east'].name} by alice: given back; 1 entry left to give back." in shown
    asked = text_of(console.get(f"/runs/{run}/keep-rest").text)
    assert (
        "Keep what is left of 'storms': its 1 entry left to give back stay in the world as they "
        "stand, kept in the name alice with the reason you give; nothing is given back. 'storms' "
        "then has nothing left to give back."
    ) in asked
    done = console.post(f"/runs/{run}/keep-rest", {"csrf": token, "reason": WHY})
    assert done.status_code == 303
    shown = text_of(console.get(f"/runs/{run}").text)
    assert f"Kept what was left in the name alice ({WHY}): 1 entry kept" in shown
    assert status(api.rl, run) == "complete"
    assert "Keep what is left…" not in decide_buttons(console.get(f"/runs/{run}").text)


def test_the_confirmation_of_a_retry_says_a_held_lease_is_left_before_anything_is_done(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    holder = holding_north(api.rl, clock)
    console.sign_in("operator")
    asked = console.get(f"/entries/{north.entry_id}/retry")
    shown = text_of(asked.text)
    assert (
        f"Retry {north.name} of 'storms': nothing would be restored now, because another live "
        f"run holds its target: north is held by run {holder} until 2026-12-02 13:01:00 UTC: "
        "not restored Nothing will change."
    ) in shown
    assert "Yes, retry it" not in shown


def test_a_viewer_sees_no_decision_buttons_and_is_refused_the_pages_and_the_acts(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    run = drifted(api.rl, game)
    north = leases(api.rl, run)["north"]
    console.sign_in("viewer")
    assert decide_buttons(console.get(f"/runs/{run}").text) == []
    assert decide_buttons(console.get(f"/entries/{north.entry_id}").text) == []
    before = written(api.rl)
    for path in (
        f"/entries/{north.entry_id}/keep",
        f"/entries/{north.entry_id}/retry",
        f"/runs/{run}/keep-rest",
    ):
        assert console.get(path).status_code == 403
        answer = console.act(path, {"reason": WHY}, from_page=f"/runs/{run}")
        assert answer.status_code == 403, answer.text
        assert "only operators and admins" in text_of(answer.text)
    assert console.get(f"/runs/{run}/decide?entry={north.entry_id}&act=keep").status_code == 403
    assert written(api.rl) == before


def test_a_running_run_offers_no_decision_and_its_confirmation_says_why(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    run = api.rl.runs.start(spec(phase("p1", lease_step("w", "west"), advance="manual")))
    tick(api.rl)
    west = leases(api.rl, run)["west"]
    console.sign_in("operator")
    assert decide_buttons(console.get(f"/runs/{run}").text) == []
    shown = text_of(console.get(f"/entries/{west.entry_id}/keep").text)
    assert (
        "'festival' is still running: a person decides about its entries once it has ended. "
        "Nothing will change."
    ) in shown
    token = console.form_token(f"/runs/{run}")
    answer = console.post(f"/entries/{west.entry_id}/keep", {"csrf": token, "reason": WHY})
    assert answer.status_code == 409
    assert f"run festival ({run}) is still running" in text_of(answer.text)
