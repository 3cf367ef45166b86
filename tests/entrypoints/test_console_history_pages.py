"""The entry page and the replay page, without a browser, on both stores: an entry's facts and
its history version by version (a drifted lease's three values side by side, who kept it), a
run as of a chosen time, every refusal as a page naming the field, and markup shown as text."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from html import unescape
from typing import Any
from uuid import UUID, uuid4

from runledger.application.web.words import when
from tests.support.api_support import (
    DOWN,
    Api,
    Shard,
    api_fixture,
    api_rl_fixture,
    shard_fixture,
    shard_run,
    tick,
)
from tests.support.console_support import Console, console_fixture, text_of
from tests.support.playing import GAME_SPAWN as SPAWN
from tests.support.playing import START, Clock, lease_step, phase, spec, step
from tests.support.world import World, answering

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
ESCAPED = ("&lt;script&gt;alert(1)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;")


def entries_of(api: Api, run: UUID) -> list[dict[str, Any]]:
    return [e for group in api.run(run)["entries"] for e in group["entries"]]


def the_entry(api: Api, run: UUID, kind: str) -> dict[str, Any]:
    [found] = [e for e in entries_of(api, run) if e["kind"] == kind]
    return found


def drifted_lease(api: Api, game: World, clock: Clock, applied: Any, current: Any) -> UUID:
    """A run whose leased value someone else changed before the run gave it back: the lease
    drifted, and its baseline, applied and current values all differ."""
    run = api.start(spec(phase("p1", lease_step("weather", "plaza", applied), advance="manual")))
    tick(api.rl)
    game.values["plaza"] = current
    clock.advance(60)
    assert api.post(f"/admin/events/runs/{run}/advance", "operator").status_code == 200
    tick(api.rl)
    lease = the_entry(api, run, "override")
    assert lease["state"] == "drifted", lease
    return UUID(lease["entry_id"])


def body_of(html: str) -> str:
    return html.split("<main", 1)[1]


def said(html: str) -> str:
    """What a person reads, with the space a tag left before punctuation taken out."""
    return re.sub(r" ([,:;.])", r"\1", text_of(html))


def sides_of(html: str, version: int) -> dict[str, str]:
    """The three values a frame shows side by side, as the page's text says them."""
    frame = body_of(html).split(f'data-version="{version}"', 1)[1].split("</li>", 1)[0]
    block = frame.split('class="side-by-side"', 1)[1]
    found = re.findall(
        r'data-side="(\w+)">.*?(?:<pre>(.*?)</pre>|<p class="value" data-value>(.*?)</p>)',
        block,
        re.S,
    )
    return {side: unescape(pre or plain) for side, pre, plain in found}


def changes_of(html: str, version: int) -> dict[str, tuple[str, str]]:
    """What a frame's table says changed: each field's value before and after, in words (a
    mapping or a list as JSON)."""
    frame = body_of(html).split(f'data-version="{version}"', 1)[1].split("</li>", 1)[0]
    found = re.findall(
        r'<tr data-field="(\w+)">.*?<td data-label="Before">(.*?)</td>\s*'
        r'<td data-label="After">(.*?)</td>',
        frame,
        re.S,
    )
    return {name: (_pre(before), _pre(after)) for name, before, after in found}


def _pre(cell: str) -> str:
    return unescape(re.sub(r"</?pre>", "", cell)).strip()


# --- the entry page ----------------------------------------------------------------------------


def test_an_entry_page_says_what_it_is_where_it_stands_and_each_version_with_who_and_when(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    shard.revert_answer = DOWN
    run = api.start(shard_run(1, name="harvest"))
    tick(api.rl, 2)
    crate = the_entry(api, run, "crate")
    console.sign_in("viewer")
    page = console.get(f"/entries/{crate['entry_id']}")
    assert page.status_code == 200, page.text
    shown = said(page.text)
    assert f"Entry crate:{crate['ref']}" in shown
    assert f"Kind crate Ref {crate['ref']} Module / action shard / shard.spawn" in shown
    assert f'<a href="/runs/{run}">harvest</a>' in page.text
    assert 'data-fact="state"><span class="badge tone-bad"' in page.text
    assert 'data-status="failing"><span aria-hidden="true">⚠</span> failing' in page.text
    assert "Attempts 1 Last error the shard is down" in shown
    assert f"Next attempt {when(datetime.fromisoformat(crate['next_attempt_at']))}" in shown
    assert "Kept by no one" in shown
    assert "3 versions." in shown
    assert re.findall(r'data-event="(\w+)"', page.text) == [
        "Recorded",
        "RevertClaimed",
        "RevertFailed",
    ]
    assert "Version 2: taken to be given back 2026-12-02 12:00:00 UTC · by w1" in shown
    assert "Version 3: giving it back failed 2026-12-02 12:00:00 UTC · by w1" in shown
    assert changes_of(page.text, 3)["last_error"] == ("—", "the shard is down")
    assert changes_of(page.text, 2)["attempts"] == ("0", "1")
    assert changes_of(page.text, 1)["state"] == ("—", "in use")  # nothing came before it
    assert "side-by-side" not in page.text  # neither a lease nor a drift


def test_a_drifted_lease_shows_baseline_applied_and_current_side_by_side(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    lease = drifted_lease(api, game, clock, applied="storm", current="hail")
    console.sign_in("viewer")
    page = console.get(f"/entries/{lease}")
    assert page.status_code == 200, page.text
    assert re.findall(r'data-event="(\w+)"', page.text) == ["Recorded", "RevertClaimed", "Drifted"]
    assert sides_of(page.text, 1) == {"baseline": "clear", "applied": "storm", "current": "—"}
    assert sides_of(page.text, 3) == {"baseline": "clear", "applied": "storm", "current": "hail"}
    shown = said(page.text)
    assert "Baseline, applied and current as in the version before." in shown  # version 2
    assert "The current value is not what the run applied, so runledger left it alone" in shown
    assert (
        "Version 3: found somebody else's value: left alone 2026-12-02 12:01:00 UTC · by w1"
        in shown
    )


def test_a_kept_entry_says_who_kept_it_and_when(console: Console, api: Api, clock: Clock) -> None:
    run = api.start(shard_run(1, advance="manual"))
    tick(api.rl)
    clock.advance(90)
    kept = api.post(f"/admin/events/runs/{run}/cancel", "operator", json={"cleanup": False})
    assert kept.status_code == 200, kept.text
    crate = the_entry(api, run, "crate")
    console.sign_in("viewer")
    shown = said(console.get(f"/entries/{crate['entry_id']}").text)
    assert "State · kept" in shown
    assert "Kept by alice" in shown
    assert "Version 2: kept 2026-12-02 12:01:30 UTC · by alice" in shown


def test_an_entry_page_read_to_a_version_says_how_many_there_are(
    console: Console, api: Api, game: World, clock: Clock
) -> None:
    lease = drifted_lease(api, game, clock, applied="storm", current="hail")
    console.sign_in("viewer")
    shown = said(console.get(f"/entries/{lease}?upto=2").text)
    assert "3 versions. Showing versions 1 to 2: show them all." in shown
    assert "Version 3" not in shown


def test_an_entry_that_is_not_there_or_not_an_id_is_a_page_saying_so(
    console: Console, api: Api
) -> None:
    console.sign_in("viewer")
    unknown = uuid4()
    missing = console.get(f"/entries/{unknown}")
    assert missing.status_code == 404
    assert f"no ledger entry {unknown}" in said(missing.text)
    run = api.start(shard_run(1))
    tick(api.rl)
    assert console.get(f"/entries/{run}").status_code == 404  # a run is not an entry
    malformed = console.get("/entries/%3Cscript%3E")
    assert malformed.status_code == 422
    assert "entry_id: must be an id (a UUID" in said(malformed.text)
    assert "<script>" not in body_of(malformed.text)
    crate = the_entry(api, run, "@step")
    zero = console.get(f"/entries/{crate['entry_id']}?upto=0")
    assert zero.status_code == 422
    assert "upto: must be at least 1" in said(zero.text)


def test_an_entry_page_needs_a_session(console: Console) -> None:
    answer = console.get(f"/entries/{uuid4()}")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/signin?next=")


# --- the replay page ---------------------------------------------------------------------------


def staged_run(api: Api, clock: Clock) -> UUID:
    """A run with an event at each minute: started at 12:00, its step done at 12:01, advanced
    by alice at 12:02, its crates given back at 12:03."""
    run = api.start(shard_run(2, name="autumn fair", advance="manual"))
    clock.advance(60)
    tick(api.rl)
    clock.advance(60)
    assert api.post(f"/admin/events/runs/{run}/advance", "operator").status_code == 200
    clock.advance(60)
    tick(api.rl)
    return run


def events_shown(html: str) -> list[str]:
    return re.findall(r'<tr data-position="\d+" data-event="(\w+)">', html)


def test_a_replay_now_shows_every_event_in_store_order_and_the_entries_grouped_with_counts(
    console: Console, api: Api, clock: Clock
) -> None:
    run = staged_run(api, clock)
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}/replay")
    assert page.status_code == 200, page.text
    everything = api.get(f"/admin/events/runs/{run}/replay", "viewer").json()
    assert events_shown(page.text) == [line["event"] for line in everything["lines"]]
    positions = [int(p) for p in re.findall(r'<tr data-position="(\d+)"', page.text)]
    assert positions == sorted(positions)
    shown = said(page.text)
    assert (
        f"Now: {len(everything['lines'])} of {len(everything['lines'])} events had happened."
        in shown
    )
    assert "The run was · completed; its cleanup ✓ nothing left." in shown
    assert "✓ given back 2 entries" in shown
    assert "· replaced 1 placeholder, not counted as entries" in shown
    assert "2026-12-02 12:02:00 UTC run completed Completed alice" in shown
    assert 'type="datetime-local" step="1" name="as_of"' in page.text
    assert '<label for="as-of">Time (UTC)' in page.text


def test_a_replay_as_of_a_middle_time_shows_fewer_events_and_the_states_then(
    console: Console, api: Api, clock: Clock
) -> None:
    run = staged_run(api, clock)
    console.sign_in("viewer")
    now = events_shown(console.get(f"/runs/{run}/replay").text)
    page = console.get(f"/runs/{run}/replay?as_of=2026-12-02T12:01:30&show=time")
    assert page.status_code == 200, page.text
    then = events_shown(page.text)
    assert 0 < len(then) < len(now) and then == now[: len(then)]
    shown = said(page.text)
    assert f"As of 2026-12-02 12:01:30 UTC: {len(then)} of {len(now)} events had happened." in shown
    assert "The run was … running" in shown
    assert "… in use 2 entries" in shown and "given back" not in shown
    assert 'value="2026-12-02T12:01:30"' in page.text  # the picker keeps the time asked for


def test_the_slider_chooses_one_of_the_runs_event_times(
    console: Console, api: Api, clock: Clock
) -> None:
    run = staged_run(api, clock)
    console.sign_in("viewer")
    page = console.get(f"/runs/{run}/replay?as_of=&event=1&show=event")
    assert page.status_code == 200, page.text
    assert 'type="range" name="event" min="0" max="3" step="1"' in page.text
    assert 'value="1" aria-describedby="at-event-said"' in page.text
    assert '<span id="at-event-said" class="help">2026-12-02 12:01:00 UTC</span>' in page.text
    shown = said(page.text)
    assert "As of 2026-12-02 12:01:00 UTC:" in shown
    picked = console.get(f"/runs/{run}/replay?as_of=2026-12-02T12:01:00&show=time")
    assert events_shown(picked.text) == events_shown(page.text)
    # htmx asks for the view alone as the slider moves; the time picker's value comes along
    moved = console.get(
        f"/runs/{run}/replay?as_of=2026-12-02T12:00:00&event=3&show=event",
        headers={"HX-Request": "true"},
    )
    assert moved.text.lstrip().startswith('<div id="replay-then">') and "<html" not in moved.text
    assert "As of 2026-12-02 12:03:00 UTC" in said(f"<main>{moved.text}")
    # ... and the picker and the slider's words follow it, out of band (the slider stays put)
    assert 'value="2026-12-02T12:03:00" hx-swap-oob="true">' in moved.text
    assert 'class="help" hx-swap-oob="true">2026-12-02 12:03:00 UTC</span>' in moved.text
    assert 'id="at-event"' not in moved.text


def test_a_replay_before_the_run_began_says_nothing_had_happened_yet(
    console: Console, api: Api, clock: Clock
) -> None:
    run = staged_run(api, clock)
    console.sign_in("viewer")
    early = START - timedelta(hours=1)
    page = console.get(f"/runs/{run}/replay?as_of={early:%Y-%m-%dT%H:%M:%S}")
    assert page.status_code == 200, page.text
    shown = said(page.text)
    assert (
        "As of 2026-12-02 11:00:00 UTC, nothing had happened yet: the run began at "
        "2026-12-02 12:00:00 UTC."
    ) in shown
    assert events_shown(page.text) == []


def test_a_replay_refuses_a_time_that_is_not_one_naming_the_field(
    console: Console, api: Api
) -> None:
    run = api.start(shard_run(1))
    console.sign_in("viewer")
    for bad in ("yesterday", "2026-13-01T00:00", HOSTILE[0], "x" * 41):
        answer = console.get(f"/runs/{run}/replay", params={"as_of": bad})
        assert answer.status_code == 422, bad
        assert "as_of: " in said(answer.text), bad
        assert "<script>" not in body_of(answer.text)
    beyond = console.get(f"/runs/{run}/replay?event=99&show=event")
    assert beyond.status_code == 422
    assert "event: the run's events are at positions 0 to 0" in said(beyond.text)
    odd = console.get(f"/runs/{run}/replay?show=later")
    assert odd.status_code == 422 and "show: 'later' is not one of time, event" in said(odd.text)
    zoned = console.get(f"/runs/{run}/replay", params={"as_of": "2026-12-02T13:00:00+01:00"})
    assert "As of 2026-12-02 12:00:00 UTC" in said(zoned.text)


def test_a_replay_of_a_run_that_is_not_there_or_not_an_id_is_a_page_saying_so(
    console: Console,
) -> None:
    console.sign_in("viewer")
    unknown = uuid4()
    missing = console.get(f"/runs/{unknown}/replay")
    assert missing.status_code == 404
    assert f"no run {unknown}" in said(missing.text)
    malformed = console.get("/runs/not-a-run/replay")
    assert malformed.status_code == 422
    assert "run_id: must be an id (a UUID" in said(malformed.text)


# --- markup ------------------------------------------------------------------------------------


def test_markup_in_kinds_refs_errors_and_drift_values_is_shown_as_text(
    console: Console, api: Api, game: World, shard: Shard, clock: Clock
) -> None:
    game.script(
        "perform",
        SPAWN,
        answering({"ok": True, "resources": [{"kind": "k<b>", "ref": HOSTILE[1]}]}),
    )
    made = api.start(spec(phase("p1", step("spawn", SPAWN)), name=HOSTILE[0]))
    tick(api.rl)
    shard.revert_answer = {"ok": False, "error": HOSTILE[0]}
    failing = api.start(shard_run(1))
    tick(api.rl, 2)
    huge = {"deep": [[[{"html": HOSTILE[1]}]]], "big": "x" * 9_000}
    lease = drifted_lease(api, game, clock, applied=HOSTILE[0], current=huge)
    console.sign_in("viewer")
    pages = {
        "made": console.get(f"/entries/{the_entry(api, made, 'k<b>')['entry_id']}").text,
        "failing": console.get(f"/entries/{the_entry(api, failing, 'crate')['entry_id']}").text,
        "lease": console.get(f"/entries/{lease}").text,
        "replay made": console.get(f"/runs/{made}/replay").text,
        "replay failing": console.get(f"/runs/{failing}/replay").text,
    }
    for name, html in pages.items():
        body = body_of(html)
        assert "<script>alert" not in body and "<img src=x" not in body, name
        assert "<b>" not in body, name
    assert ESCAPED[1] in pages["made"] and "k&lt;b&gt;" in pages["made"]
    assert ESCAPED[0] in pages["made"]  # the run's name
    assert ESCAPED[0] in pages["failing"] and ESCAPED[0] in pages["replay failing"]
    assert ESCAPED[1] in pages["replay made"]
    current = sides_of(pages["lease"], 3)["current"]
    assert '"html": "\\"><img src=x onerror=alert(1)>"' in current
    assert len(current) < 5_000 and "more characters)" in current
    assert sides_of(pages["lease"], 3)["applied"] == HOSTILE[0]
