"""The console page by page, without a browser, on both stores: signing in and out, the runs
page, and every refusal as a page that says why and changes nothing."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.support.api_support import (
    Api,
    Shard,
    api_fixture,
    api_rl_fixture,
    shard_fixture,
    shard_run,
)
from tests.support.console_support import Console, console_fixture, incomplete_run, text_of
from tests.support.playing import Clock

__all__ = ["api_fixture", "api_rl_fixture", "console_fixture", "shard_fixture"]

HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def test_the_address_itself_leads_to_sign_in_and_back_to_the_page_asked_for(
    console: Console,
) -> None:
    home = console.get("/")
    assert home.status_code == 303 and home.headers["location"] == "/runs"
    asked = console.get("/runs?status=running")
    assert asked.status_code == 303
    assert asked.headers["location"] == "/signin?next=%2Fruns%3Fstatus%3Drunning"
    page = console.get(asked.headers["location"])
    assert page.status_code == 200
    assert '<label for="token">API token</label>' in page.text
    assert 'name="next" value="/runs?status=running"' in page.text


def test_signing_in_names_the_person_on_every_page_and_sets_a_strict_http_only_cookie(
    console: Console, api: Api
) -> None:
    answer = console.post(
        "/signin",
        {"token": api.secrets["operator"], "csrf": console.form_token(), "next": "/runs"},
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/runs"
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    runs = console.get("/runs")
    assert runs.status_code == 200
    assert "Signed in as <strong data-actor>alice</strong> (operator)" in runs.text


def test_a_wrong_token_is_refused_on_the_form_and_the_token_is_never_shown_back(
    console: Console,
) -> None:
    guess = "rl_not-a-token-<b>"
    answer = console.post("/signin", {"token": guess, "csrf": console.form_token()})
    assert answer.status_code == 401
    assert "token: that is not a live runledger token" in answer.text
    assert "not-a-token" not in answer.text
    assert console.get("/runs").status_code == 303


def test_sign_in_only_leads_back_to_this_console(console: Console, api: Api) -> None:
    for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        answer = console.post(
            "/signin",
            {"token": api.secrets["viewer"], "csrf": console.form_token(), "next": elsewhere},
        )
        assert answer.headers["location"] == "/runs", elsewhere


def test_a_form_without_its_csrf_token_does_nothing_and_says_why(
    console: Console, api: Api
) -> None:
    console.form_token()  # a session of this console, whose form token the post leaves out
    refused = console.post("/signin", {"token": api.secrets["operator"]})
    assert refused.status_code == 403
    assert "CSRF token is missing or out of date" in refused.text
    assert console.get("/runs").status_code == 303  # not signed in
    console.sign_in()
    stale = console.post("/signout", {"csrf": "a-token-from-another-session"})
    assert stale.status_code == 403
    assert console.get("/runs").status_code == 200  # still signed in


def test_signing_out_ends_the_session(console: Console) -> None:
    console.sign_in()
    answer = console.act("/signout")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")
    assert "You have signed out." in console.get(answer.headers["location"]).text
    assert console.get("/runs").status_code == 303


def test_a_session_ends_after_its_hours_and_the_sign_in_page_says_so(
    console: Console, api: Api, clock: Clock
) -> None:
    console.sign_in()
    clock.advance(timedelta(hours=api.rl.settings.session_hours, seconds=1).total_seconds())
    ended = console.get("/runs")
    assert ended.status_code == 303
    assert "Your session ended after 8 hours." in console.get(ended.headers["location"]).text


def test_revoking_the_token_signs_its_sessions_out(console: Console, api: Api) -> None:
    console.sign_in("operator")
    alice = next(t for t in api.rl.tokens.listing() if t.name == "alice")
    api.rl.tokens.revoke(alice.token_id, by="root")
    gone = console.get("/runs")
    assert gone.status_code == 303
    assert "Your token has been revoked." in console.get(gone.headers["location"]).text


def test_the_runs_page_lists_newest_first_with_badges_in_words_and_counts_what_needs_a_person(
    console: Console, api: Api, shard: Shard, clock: Clock
) -> None:
    console.sign_in("viewer")
    assert "No run needs a person." in console.get("/runs").text
    first = api.start(shard_run(1, name="spring festival"))
    clock.advance(1)
    api.post(f"/admin/events/runs/{first}/abort", "operator", json={"reason": "storm"})
    clock.advance(1)
    stuck = incomplete_run(api, shard, clock, name="summer festival")
    page = console.get("/runs").text
    assert page.index(str(stuck)) < page.index(str(first))
    assert 'data-status="aborted"><span aria-hidden="true">⚠</span> aborted' in page
    assert 'data-status="incomplete"><span aria-hidden="true">⚠</span> needs a person' in page
    assert "1 run needs a person (cleanup incomplete)." in text_of(page)


def test_the_runs_page_filters_by_status_cleanup_and_name(console: Console, api: Api) -> None:
    kept = api.start(shard_run(1, name="winter market"))
    other = api.start(shard_run(1, name="autumn fair"))
    api.post(f"/admin/events/runs/{other}/abort", "operator", json={"reason": "rain"})
    console.sign_in("viewer")
    running = console.get("/runs?status=running&cleanup_status=&name=").text
    assert str(kept) in running and str(other) not in running
    named = console.get("/runs?status=&cleanup_status=&name=autumn").text
    assert str(other) in named and str(kept) not in named
    none = console.get("/runs?cleanup_status=incomplete").text
    assert "No runs match these filters." in none


def test_a_filter_that_is_not_a_status_is_a_page_naming_the_field(console: Console) -> None:
    console.sign_in("viewer")
    answer = console.get("/runs?status=%3Cscript%3E")
    assert answer.status_code == 422
    assert "status: &#39;&lt;script&gt;&#39; is not one of running" in answer.text
    assert "<script>" not in answer.text.split("</head>")[1]


def test_names_that_are_markup_are_shown_as_text(console: Console, api: Api) -> None:
    for name in HOSTILE:
        api.start(shard_run(1, name=name))
    console.sign_in("viewer")
    page = console.get("/runs").text
    body = page.split("<main", 1)[1]
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in body


def test_an_unknown_page_is_a_page_and_the_api_still_answers_json(console: Console) -> None:
    console.sign_in("viewer")
    missing = console.get("/no-such-page")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert "<h1>Not found</h1>" in missing.text
    api_missing = console.get("/admin/no-such-route")
    assert api_missing.status_code == 404
    assert api_missing.headers["content-type"] == "application/problem+json"
    assert api_missing.json()["detail"] == "Not Found"


def test_every_asset_is_served_by_runledger_and_pages_forbid_other_origins(
    console: Console,
) -> None:
    page = console.get("/signin")
    assets = re.findall(r'(?:src|href)="([^"#]+)"', page.text)
    assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets)
    for asset in assets:
        if asset.startswith("/static/"):
            assert console.get(asset).status_code == 200, asset
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
