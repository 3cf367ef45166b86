"""The entry, replay, modules and runners pages in headless Chromium against a real server: a
drifted lease's three values side by side on a wide screen and stacked on a phone, the replay's
slider taking the view back in time, the fleet pages, and markup that runs nothing.
Screenshots land in artifacts/screenshots (entry, entry-phone, replay, modules, runners)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from runledger.application.bootstrap import bootstrap
from runledger.application.settings import Settings
from tests.application.test_loader import write_module
from tests.entrypoints.test_console_history_pages import drifted_lease
from tests.support.api_support import (
    Api,
    Shard,
    serving,
    shard_run,
    tick,
)
from tests.support.console_support import (
    Browsing,
    live_server,
)
from tests.support.playing import GAME_SPAWN as SPAWN
from tests.support.playing import Clock, phase, spec, step
from tests.support.world import World, answering

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def dialogs_of(page: Page) -> list[str]:
    """Every alert, confirm or prompt the page opens: markup that ran would open one."""
    opened: list[str] = []
    page.on("dialog", lambda dialog: opened.append(dialog.message))
    return opened


def overflow(page: Page) -> int:
    found: int = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return found


def test_a_drifted_lease_shows_its_three_values_side_by_side_and_stacked_on_a_phone(
    browsing: Browsing, api: Api, game: World, clock: Clock
) -> None:
    applied = {"sky": "storm", "wind_kmh": 40, "note": "the plaza event's weather"}
    current = {"sky": "hail", "wind_kmh": 90, "note": "set by a game master at 12:00:30"}
    lease = drifted_lease(api, game, clock, applied, current)
    page = browsing.signed_in("viewer")
    for width, name in ((1280, "entry"), (375, "entry-phone")):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{browsing.url}/entries/{lease}")
        sides = page.locator('li.frame[data-version="3"] figure.side')
        expect(sides).to_have_count(3)
        expect(sides.nth(2)).to_contain_text('"sky": "hail"')
        boxes = [sides.nth(i).bounding_box() for i in range(3)]
        assert all(box is not None for box in boxes)
        xs = [box["x"] for box in boxes if box]
        ys = [box["y"] for box in boxes if box]
        if width == 1280:
            assert ys[0] == ys[1] == ys[2] and xs[0] < xs[1] < xs[2], boxes
        else:
            assert xs[0] == xs[1] == xs[2] and ys[0] < ys[1] < ys[2], boxes
        assert overflow(page) <= 0
        browsing.shot(page, name)


def test_moving_the_replay_slider_takes_the_view_back_in_time_without_reloading(
    browsing: Browsing, api: Api, clock: Clock
) -> None:
    run = api.start(shard_run(2, name="autumn fair", advance="manual"))
    clock.advance(60)
    tick(api.rl)
    clock.advance(60)
    assert api.post(f"/admin/events/runs/{run}/advance", "operator").status_code == 200
    clock.advance(60)
    tick(api.rl)
    page = browsing.signed_in("viewer")
    page.goto(f"{browsing.url}/runs/{run}/replay")
    rows = page.locator("table.replay-lines tbody tr")
    everything = rows.count()
    expect(page.locator("p.as-of")).to_contain_text(f"Now: {everything} of {everything}")
    page.evaluate("window.stillHere = true")
    page.get_by_label("Or one of its 4 event times").focus()
    for back_to in ("12:02:00", "12:01:00"):  # an event time back at each key: the step done
        page.keyboard.press("ArrowLeft")
        expect(page.locator("p.as-of")).to_contain_text(f"As of 2026-12-02 {back_to} UTC")
    assert 0 < rows.count() < everything
    expect(page.locator("#replay-then section").first).not_to_contain_text("given back")
    assert page.evaluate("window.stillHere") is True  # htmx swapped the view; no page load
    assert "event=1" in page.url and "show=event" in page.url
    browsing.shot(page, "replay")
    page.get_by_label("Time (UTC)").fill("2026-12-02T11:00:00")
    page.get_by_role("button", name="Show this time").click()
    expect(page.locator("p.as-of")).to_contain_text("nothing had happened yet")


@pytest.fixture
def fleet(store_url: str, tmp_path: Path, browser: Browser, clock: Clock) -> Iterator[Browsing]:
    """The console served over a runledger that loaded a folder of modules (one of which fails
    with markup in its reason), with two runners, one named like markup."""
    modules = tmp_path / "modules"
    write_module(modules, "alpha", site="shard-1")
    write_module(
        modules,
        "beta",
        site="shard-2",
        code=f"def register(ctx):\n    raise ValueError({HOSTILE[1]!r})\n",
    )
    settings = Settings(database_url=store_url, builtin_modules="", modules_dir=str(modules))
    with bootstrap(settings, clock=clock) as rl:
        served = serving(rl)
        rl.runner("w-old").join()
        clock.advance(rl.settings.runner_gone_s + 60)
        for worker in ("w1", HOSTILE[0]):
            runner = rl.runner(worker)
            runner.join()
            runner.tick()
        with served.client, live_server(served.client.app) as url:
            browsing = Browsing(url, browser, served)
            try:
                yield browsing
            finally:
                browsing.close()


def test_the_modules_and_runners_pages_render_and_markup_in_them_runs_nothing(
    fleet: Browsing,
) -> None:
    page = fleet.signed_in("viewer")
    opened = dialogs_of(page)
    page.get_by_role("link", name="Modules").click()
    failed = page.locator('tr[data-module="beta"]')
    expect(failed).to_contain_text("failed to start")
    expect(failed).to_contain_text(f"register() raised ValueError: {HOSTILE[1]}")
    expect(page.locator('tr[data-module="alpha"]')).to_contain_text("alpha.spawn")
    fleet.shot(page, "modules")
    page.get_by_role("link", name="Runners").click()
    states = page.locator("table.runners tbody tr")
    expect(states).to_have_count(3)
    assert [states.nth(i).get_attribute("data-state") for i in range(3)] == ["live", "live", "gone"]
    expect(states.nth(2)).to_contain_text("gone: no heartbeat")
    expect(page.locator("table.runners")).to_contain_text(HOSTILE[0])
    fleet.shot(page, "runners")
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    page.set_viewport_size({"width": 375, "height": 900})
    assert overflow(page) <= 0
    assert opened == []


def test_markup_in_an_entry_and_its_replay_is_shown_and_runs_nothing(
    browsing: Browsing, api: Api, game: World, shard: Shard, clock: Clock
) -> None:
    game.script(
        "perform",
        SPAWN,
        answering({"ok": True, "resources": [{"kind": "k<b>", "ref": HOSTILE[1]}]}),
    )
    run = api.start(spec(phase("p1", step("spawn", SPAWN)), name=HOSTILE[0]))
    tick(api.rl)
    [made] = [
        e for group in api.run(run)["entries"] for e in group["entries"] if e["kind"] == "k<b>"
    ]
    lease = drifted_lease(api, game, clock, applied=HOSTILE[0], current={"x": HOSTILE[1]})
    page = browsing.signed_in("viewer", width=375)
    opened = dialogs_of(page)
    for path, shown in (
        (f"/entries/{made['entry_id']}", HOSTILE[1]),
        (f"/runs/{run}/replay", HOSTILE[1]),
        (f"/entries/{lease}", HOSTILE[0]),
    ):
        page.goto(browsing.url + path)
        expect(page.locator("main")).to_contain_text(shown)
        assert page.locator("main img").count() == 0, path
        assert page.locator("main script").count() == 0, path
        assert overflow(page) <= 0, path
    page.wait_for_timeout(200)  # time for a handler that slipped through to open its dialog
    assert opened == []
