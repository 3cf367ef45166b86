"""Console sessions kept in the store, on both stores: a sign-out ends the session on the server,
so a copy of its cookie signs in nowhere; a sign-in closes the session its cookie held; a
revoked token, a closed or lapsed session says why on the sign-in page; and a cookie this
console cannot read, or that names no session of its own, posting a form, gets the sign-in
page (never a 4xx or a 5xx)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from uuid import UUID

import httpx
import pytest
from itsdangerous import TimestampSigner

from runledger.domain.session import Session
from tests.support.api_support import (
    Api,
    Opener,
    api_fixture,
    api_rl_fixture,
    serving,
    shard_fixture,
    shard_run,
)
from tests.support.console_support import (
    Console,
    console_fixture,
    csrf_of,
    live_server,
    text_of,
    unfrozen_clock_fixture,
)

__all__ = [
    "api_fixture",
    "api_rl_fixture",
    "console_fixture",
    "shard_fixture",
    "unfrozen_clock_fixture",
]

COOKIE = "runledger_session"
SECRET = "a secret of this console, 32 chars"


def signed(session: dict[str, object], secret: str = SECRET) -> str:
    """A cookie as Starlette's session middleware signs it."""
    data = base64.b64encode(json.dumps(session).encode())
    return TimestampSigner(secret).sign(data).decode()


def sign_in_over_http(browser: httpx.Client, secret: str) -> None:
    csrf = csrf_of(browser.get("/signin").text)
    answer = browser.post("/signin", data={"token": secret, "csrf": csrf, "next": "/runs"})
    assert answer.status_code == 303, answer.text


def sign_in_page_after(answer: httpx.Response, client: httpx.Client) -> str:
    """Where a refused request leads: the sign-in page, whose text is returned."""
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].startswith("/signin?")
    page = client.get(answer.headers["location"])
    assert page.status_code == 200
    assert '<label for="token">API token</label>' in page.text
    return text_of(page.text)


@pytest.fixture(name="own_secret")
def own_secret_fixture(opened: Opener) -> Iterator[Api]:
    """The console with a session secret the test knows, to sign cookies of its own."""
    served = serving(opened(session_secret=SECRET))
    with served.client:
        yield served


def test_a_cookie_copied_before_sign_out_signs_in_nowhere_after_it(api: Api) -> None:
    with live_server(api.client.app) as url:
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as browser:
            sign_in_over_http(browser, api.secrets["operator"])
            copied = browser.cookies[COOKIE]
            runs = browser.get("/runs")
            assert runs.status_code == 200 and "data-actor" in runs.text
            out = browser.post("/signout", data={"csrf": csrf_of(runs.text)})
            assert out.status_code == 303
        with httpx.Client(base_url=url, cookies={COOKIE: copied}, timeout=30) as thief:
            answer = thief.get("/runs", follow_redirects=False)
            said = sign_in_page_after(answer, thief)
            assert "Your session was closed (signed out); sign in again." in said
            assert "Signed in as" not in said


def test_a_form_posted_with_a_copied_cookie_after_sign_out_does_nothing(
    console: Console, api: Api
) -> None:
    run_id = api.start(shard_run(1, advance="manual"))
    console.sign_in("operator")
    csrf = console.form_token("/runs")
    copied = api.client.cookies[COOKIE]
    assert console.post("/signout", {"csrf": csrf}).status_code == 303
    api.client.cookies.set(COOKIE, copied)
    answer = console.post(f"/runs/{run_id}/confirm/abort", {"csrf": csrf, "reason": "x"})
    assert "Your session was closed (signed out)" in sign_in_page_after(answer, api.client)
    assert api.run(run_id)["run"]["status"] == "running"


def test_signing_in_again_closes_the_session_the_cookie_held(console: Console, api: Api) -> None:
    console.sign_in("viewer")
    first = api.client.cookies[COOKIE]
    console.sign_in("operator")
    assert "data-actor>alice<" in console.get("/runs").text
    api.client.cookies.set(COOKIE, first)
    said = sign_in_page_after(console.get("/runs"), api.client)
    assert "Your session was closed (signed in again); sign in again." in said


def test_a_revoked_token_says_why_on_the_sign_in_page(console: Console, api: Api) -> None:
    console.sign_in("operator")
    alice = next(t for t in api.rl.tokens.listing() if t.name == "alice")
    api.rl.tokens.revoke(alice.token_id, by="root")
    said = sign_in_page_after(console.get("/runs?status=running"), api.client)
    assert "Your token has been revoked." in said


@pytest.mark.parametrize(
    "cookie",
    ["not-a-cookie", "a.b.c", base64.b64encode(b'{"session": "x"}').decode(), "x" * 3_000],
)
def test_an_unreadable_cookie_posting_a_form_gets_the_sign_in_page(
    console: Console, api: Api, cookie: str
) -> None:
    run_id = api.start(shard_run(1, advance="manual"))
    for path, form in (
        (f"/runs/{run_id}/confirm/abort", {"csrf": "forged", "reason": "x"}),
        ("/signout", {"csrf": "forged"}),
        ("/signin", {"csrf": "forged", "token": api.secrets["operator"]}),
    ):
        api.client.cookies.clear()  # only this cookie: not the one the last sign-in page set
        api.client.cookies.set(COOKIE, cookie)
        answer = console.post(path, form)
        assert "Your session has ended; sign in again." in sign_in_page_after(answer, api.client)
    assert api.run(run_id)["run"]["status"] == "running"


def test_a_signed_cookie_naming_no_session_of_this_store_gets_the_sign_in_page(
    own_secret: Api,
) -> None:
    token_id = own_secret.rl.tokens.listing()[0].token_id  # an aggregate, but not a session
    for named in ("not a uuid", "00000000-0000-4000-8000-000000000000", str(token_id), 7):
        own_secret.client.cookies.clear()
        own_secret.client.cookies.set(COOKIE, signed({"session": named, "csrf": "c"}))
        answer = own_secret.client.get("/runs", follow_redirects=False)
        said = sign_in_page_after(answer, own_secret.client)
        assert "Signed in as" not in said


def test_the_session_is_in_the_store_and_sign_out_closes_it(own_secret: Api) -> None:
    console = Console(own_secret)
    console.sign_in("viewer")
    cookie = own_secret.client.cookies[COOKIE]
    held = json.loads(base64.b64decode(TimestampSigner(SECRET).unsign(cookie, max_age=None)))
    assert set(held) == {"session", "csrf"}  # the cookie names the session, nothing more
    session = own_secret.rl.sessions.get(UUID(held["session"]))
    assert isinstance(session, Session) and session.closed_at is None
    console.act("/signout")
    closed = own_secret.rl.sessions.get(session.id)
    assert closed is not None and closed.closed_why == "signed out"
