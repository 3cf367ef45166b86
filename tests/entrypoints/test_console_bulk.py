"""The console's bulk cleanup page and its new definition page, without a browser, on both
stores: filters → the plan (runs, entries, what each would be asked, leases left alone) →
a confirmation carrying the fingerprint → apply; a stale plan is a 409 said as such; viewers
read and cannot act; a definition pasted or uploaded as JSON, refused naming the field as the
API does; and the favicon."""

from __future__ import annotations

import json
import re

from runledger.application.modules.protocol import Registry
from tests.application.test_person_holds import one_of_two_held, sky_world
from tests.support.api_support import (
    Api,
    Shard,
    api_fixture,
    api_rl_fixture,
    shard_fixture,
    shard_run,
)
from tests.support.console_support import Console, console_fixture, csrf_of, incomplete_run, text_of
from tests.support.playing import Clock

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]

FILTERS = {"module": "shard", "run_status": "completed", "cleanup_status": "incomplete"}


def plan_of(html: str) -> str:
    found = re.search(r'data-plan="([0-9a-f]+)"', html)
    assert found is not None, text_of(html)
    return found.group(1)


def test_a_plan_lists_runs_entries_and_asks_then_applying_it_behind_a_confirmation_retries_them(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    console.sign_in("operator")
    empty = console.get("/cleanup")
    assert empty.status_code == 200 and "data-plan=" not in empty.text
    planned = console.get("/cleanup", params={**FILTERS, "plan": "1"}).text
    fingerprint = plan_of(planned)
    api_plan = api.post("/admin/events/cleanup/plan", "viewer", json=FILTERS).json()
    assert api_plan["fingerprint"] == fingerprint
    said = text_of(planned)
    assert "1 run, 2 entries to ask again; nothing written." in said
    assert "festival · completed ⚠ needs a person" in said
    assert said.count("shard.spawn: revert crate:") == 2 and "the shard is down" in said
    asked = console.get("/cleanup", params={**FILTERS, "plan": "1", "confirm": fingerprint}).text
    assert (
        f"Apply plan {fingerprint[:12]}: ask the modules again for 2 entries of 1 run, each "
        "run's cleanup retried in the name alice." in text_of(asked)
    )
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', asked))
    assert form["fingerprint"] == fingerprint and form["module"] == "shard"
    applied = console.post("/cleanup/apply", {**form, "csrf": csrf_of(asked)})
    assert applied.status_code == 303, text_of(applied.text)
    after = console.get(applied.headers["location"]).text
    assert (
        f"Plan {fingerprint[:12]} applied by alice: 1 run asked again. festival: 2 given back, "
        "0 failing; cleanup: nothing left." in text_of(after)
    )
    assert "These filters select no entry left to give back" in text_of(after)
    assert api.run(run)["run"]["cleanup_status"] == "complete"


def test_a_stale_plan_is_refused_with_409_and_the_selection_as_it_is_now(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    incomplete_run(api, shard, clock)
    console.sign_in("operator")
    planned = console.get("/cleanup", params={**FILTERS, "plan": "1"}).text
    old = plan_of(planned)
    shard.revert_answer = {"ok": False, "error": "down again"}
    incomplete_run(api, shard, clock, name="fair")  # the selection grows: the plan is stale
    asked = console.get("/cleanup", params={**FILTERS, "plan": "1", "confirm": old}).text
    assert f"The plan {old[:12]} is stale" in text_of(asked) and "Yes, apply" not in asked
    form = {**FILTERS, "fingerprint": old, "csrf": csrf_of(planned)}
    refused = console.post("/cleanup/apply", form)
    assert refused.status_code == 409
    said = text_of(refused.text)
    assert f"the plan {old[:12]}… is stale: the selection is now" in said
    assert "2 runs, 4 entries to ask again" in said and plan_of(refused.text) != old
    assert "Cleanup retried" not in said
    found = api.get("/admin/events/runs", "viewer").json()["items"]
    assert [run["cleanup_status"] for run in found] == ["incomplete", "incomplete"]


def test_a_lease_another_live_run_holds_is_shown_left_alone_before_anything_is_done(
    console: Console, api: Api, registry: Registry
) -> None:
    sky = sky_world(registry)
    one_of_two_held(api.rl, sky)
    console.sign_in("operator")
    planned = console.get("/cleanup", params={"plan": "1"}).text
    said = text_of(planned)
    assert "(1 left alone: another live run holds the target)" in said
    assert "left alone: north is held by run" in said
    assert planned.count("data-held") == 1
    asked = console.get("/cleanup", params={"plan": "1", "confirm": plan_of(planned)}).text
    assert "1 lease entry will not be restored, because another live run holds the target" in (
        text_of(asked)
    )


def test_viewers_read_the_plan_but_cannot_apply_it_and_a_form_needs_its_csrf_token(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    run = incomplete_run(api, shard, clock)
    console.sign_in("viewer")
    planned = console.get("/cleanup", params={**FILTERS, "plan": "1"}).text
    assert "Only operators and admins apply a plan." in text_of(planned)
    assert "Apply this plan" not in planned
    form = {**FILTERS, "fingerprint": plan_of(planned), "csrf": csrf_of(planned)}
    refused = console.post("/cleanup/apply", form)
    assert refused.status_code == 403 and "only operators and admins act" in text_of(refused.text)
    console.sign_in("operator")
    forged = console.post("/cleanup/apply", {**FILTERS, "fingerprint": plan_of(planned)})
    assert forged.status_code == 403 and "CSRF" in text_of(forged.text)
    bad = console.get("/cleanup", params={"run_status": "running", "plan": "1"})
    assert bad.status_code == 422 and "run_status: " in text_of(bad.text)
    late = console.get("/cleanup", params={"ended_after": "yesterday", "plan": "1"})
    assert late.status_code == 422 and "ended_after: 'yesterday' is not a time" in text_of(
        late.text
    )
    assert api.run(run)["run"]["cleanup_status"] == "incomplete"


def test_a_definition_is_created_from_pasted_or_uploaded_json_and_refused_naming_the_field(
    console: Console, api: Api
) -> None:
    console.sign_in("operator")
    page = console.get("/new-definition")
    assert page.status_code == 200 and 'enctype="multipart/form-data"' in page.text
    token = csrf_of(page.text)
    spec = shard_run(2)
    made = console.post(
        "/new-definition", {"csrf": token, "name": "fair", "spec": json.dumps(spec)}
    )
    assert made.status_code == 303 and made.headers["location"] == "/definitions/fair"
    shown = text_of(console.get("/definitions/fair").text)
    assert "Definition fair created by alice: its draft is revision 1, unverified" in shown
    bad = {**spec, "phases": [{"id": "p", "steps": [{"id": "no spaces", "action": "a"}]}]}
    refused = console.post("/new-definition", {"csrf": token, "name": "x", "spec": json.dumps(bad)})
    assert refused.status_code == 422
    api_said = api.post("/admin/definitions", "operator", json={"name": "x", "spec": bad})
    [detail] = api_said.json()["detail"]
    assert detail["msg"] in text_of(refused.text)
    assert detail["loc"] == ["body", "spec", "phases", 0, "steps", 0, "id"]
    assert "spec.phases.0.steps.0.id: " in text_of(refused.text)
    assert "no spaces" in refused.text  # what was typed comes back
    named = console.post("/new-definition", {"csrf": token, "name": "no spaces", "spec": "{}"})
    assert named.status_code == 422 and "name: 'no spaces' is not a definition name" in text_of(
        named.text
    )
    again = console.post(
        "/new-definition", {"csrf": token, "name": "fair", "spec": json.dumps(spec)}
    )
    assert again.status_code == 409 and "a definition named fair already exists" in text_of(
        again.text
    )
    upload = {"file": ("spec.json", json.dumps(shard_run(1)).encode(), "application/json")}
    sent = console.api.client.post(
        "/new-definition",
        data={"csrf": token, "name": "uploaded", "spec": ""},
        files=upload,
        follow_redirects=False,
    )
    assert sent.status_code == 303 and sent.headers["location"] == "/definitions/uploaded"
    latin = {"file": ("spec.json", b'{"name": "caf\xe9"}', "application/json")}
    garbled = console.api.client.post(
        "/new-definition", data={"csrf": token, "name": "latin"}, files=latin
    )
    assert garbled.status_code == 422 and "file: spec.json is not UTF-8 text" in text_of(
        garbled.text
    )
    nothing = console.post("/new-definition", {"csrf": token, "name": "empty", "spec": " "})
    assert nothing.status_code == 422 and "spec: paste the spec" in text_of(nothing.text)
    names = [d["name"] for d in api.get("/admin/definitions", "viewer").json()["items"]]
    assert names == ["fair", "uploaded"]


def test_viewers_cannot_create_a_definition(console: Console, api: Api) -> None:
    console.sign_in("viewer")
    assert console.get("/new-definition").status_code == 403
    assert "New definition" not in console.get("/definitions").text
    form = {"csrf": console.form_token("/definitions"), "name": "x", "spec": "{}"}
    assert console.post("/new-definition", form).status_code == 403
    assert api.get("/admin/definitions", "viewer").json()["items"] == []


def test_the_console_has_a_favicon_served_by_itself(console: Console) -> None:
    icon = console.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in icon.text
    old = console.get("/favicon.ico")
    assert old.status_code == 308 and old.headers["location"] == "/static/favicon.svg"
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in (
        console.get("/signin").text
    )
