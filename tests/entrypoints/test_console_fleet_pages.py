"""The modules and runners pages, without a browser, on both stores: what each module loaded or
why it did not start, the runners live ones first with their heartbeats, both polled by htmx,
and markup in a module's reason or a runner's name shown as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.services.running.runner import Runner
from runledger.application.settings import Settings
from tests.application.test_loader import write_module
from tests.support.api_support import Api, api_fixture, api_rl_fixture, serving, shard_fixture
from tests.support.console_support import Console, text_of
from tests.support.playing import Clock

__all__ = ["api_fixture", "api_rl_fixture", "shard_fixture"]

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def said(html: str) -> str:
    return re.sub(r" ([,:;.])", r"\1", text_of(html))


def body_of(html: str) -> str:
    return html.split("<main", 1)[1]


@pytest.fixture
def loaded(store_url: str, tmp_path: Path) -> Iterator[Console]:
    """The console over a runledger that loaded a folder of modules, as `serve` does: one that
    loads, one whose register() raises with markup, one folder (named like markup) without a
    manifest."""
    modules = tmp_path / "modules"
    write_module(modules, "alpha", site="shard-1")
    write_module(
        modules,
        "beta",
        site="shard-2",
        code=f"def register(ctx):\n    raise ValueError({HOSTILE[0]!r})\n",
    )
    (modules / HOSTILE[1]).mkdir()
    settings = Settings(database_url=store_url, builtin_modules="", modules_dir=str(modules))
    with bootstrap(settings) as rl:
        served = serving(rl)
        with served.client:
            console = Console(served)
            console.sign_in("viewer")
            yield console


@pytest.fixture
def console(api: Api) -> Console:
    console = Console(api)
    console.sign_in("viewer")
    return console


def rows_of(html: str, attribute: str) -> list[str]:
    return re.findall(rf'<tr {attribute}="([^"]*)"', html)


# --- modules -----------------------------------------------------------------------------------


def test_the_modules_page_says_what_loaded_and_why_a_module_did_not_start(
    loaded: Console,
) -> None:
    page = loaded.get("/modules")
    assert page.status_code == 200, page.text
    shown = said(page.text)
    assert "2 of 3 modules failed to start." in shown
    assert "alpha site shard-1" in shown
    alpha = body_of(page.text).split('data-module="alpha"', 1)[1].split("</tr>", 1)[0]
    assert 'data-status="loaded"' in alpha and "✓</span> loaded" in alpha
    assert "<code>alpha.spawn</code>" in alpha and "<code>alpha.door</code>" in alpha
    beta = body_of(page.text).split('data-module="beta"', 1)[1].split("</tr>", 1)[0]
    assert "⚠</span> failed to start" in beta
    assert "register() raised ValueError: &lt;script&gt;alert(1)&lt;/script&gt;" in beta
    assert beta.count(">none<") == 2  # no action, no lease
    assert "no module.toml in the folder" in shown
    assert "no name" in shown


def test_markup_in_a_modules_reason_or_folder_is_shown_as_text(loaded: Console) -> None:
    body = body_of(loaded.get("/modules").text)
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body  # the folder's name


def test_the_modules_page_polls_for_its_list_and_htmx_gets_the_list_alone(
    loaded: Console,
) -> None:
    page = loaded.get("/modules").text
    assert '<div id="modules" hx-get="/modules" hx-trigger="every 5s"' in page
    fragment = loaded.get("/modules", headers={"HX-Request": "true"}).text
    assert fragment.lstrip().startswith('<div id="modules"') and "<html" not in fragment
    assert "2 of 3 modules failed to start" in said(f"<main>{fragment}")


def test_a_process_that_loaded_no_module_says_so(console: Console) -> None:
    assert "This process loaded no module." in said(console.get("/modules").text)


# --- runners -----------------------------------------------------------------------------------


def joined(api: Api, worker: str) -> Runner:
    """A runner as `runledger run` starts one: recorded in the store, then ticking."""
    runner = api.rl.runner(worker)
    runner.join()
    runner.tick()
    return runner


def test_no_runner_yet_is_said_in_words(console: Console) -> None:
    assert "No runner has started on this store yet." in said(console.get("/runners").text)


def test_a_runner_that_ticked_is_live_with_its_heartbeat_host_pid_and_what_it_serves(
    console: Console, api: Api, clock: Clock
) -> None:
    runner = joined(api, "w1")
    clock.advance(20)
    assert runner.runner_id is not None
    api.rl.fleet.beat(runner.runner_id)
    page = console.get("/runners")
    assert page.status_code == 200, page.text
    [row] = [r for r in api.rl.fleet.listing(api.rl.clock())]
    shown = said(page.text)
    assert "1 runner is live, as of 2026-12-02 12:00:20 UTC." in shown
    assert f"w1 on {row.host}, pid {row.pid} {runner.runner_id} ✓ live" in shown
    assert "2026-12-02 12:00:20 UTC" in shown.split("✓ live", 1)[1]  # its last heartbeat
    assert "actions game.spawn, shard.spawn" in shown
    assert "leases weather" in shown


def test_live_runners_come_first_and_one_without_a_heartbeat_is_gone(
    console: Console, api: Api, clock: Clock
) -> None:
    older = joined(api, "w-older")
    clock.advance(1)
    joined(api, "w-newer")
    clock.advance(api.rl.settings.runner_gone_s + 5)
    assert older.runner_id is not None
    api.rl.fleet.beat(older.runner_id)
    page = console.get("/runners").text
    shown = rows_of(page, "data-runner")
    assert len(shown) == 2 and shown[0] == str(older.runner_id)  # though it started first
    assert re.findall(r'data-state="(\w+)"', body_of(page)) == ["live", "gone"]
    assert "⚠</span> gone: no heartbeat" in page
    assert "1 runner is live" in said(page)


def test_a_runner_that_stopped_says_when(console: Console, api: Api, clock: Clock) -> None:
    api.rl.runner("w1").once()
    clock.advance(30)
    shown = said(console.get("/runners").text)
    assert "0 runners are live" in shown
    assert "· stopped" in shown and "stopped 2026-12-02 12:00:00 UTC" in shown


def test_the_runners_page_polls_and_names_that_are_markup_are_text(
    console: Console, api: Api
) -> None:
    for name in HOSTILE:
        joined(api, name)
    page = console.get("/runners").text
    assert '<div id="runners" hx-get="/runners" hx-trigger="every 5s"' in page
    body = body_of(page)
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body
    fragment = console.get("/runners", headers={"HX-Request": "true"}).text
    assert fragment.lstrip().startswith('<div id="runners"') and "<html" not in fragment


def test_the_fleet_pages_need_a_session(api: Api) -> None:
    stranger = Console(api)
    for path in ("/modules", "/runners"):
        answer = stranger.get(path)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")
