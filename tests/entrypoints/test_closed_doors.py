"""What anyone can read, closed, on both stores: /readyz says only ready or not without a token
(the store and the checks are for a token's holder); /docs is Swagger UI served by runledger
itself under a Content-Security-Policy, nothing from another origin; the session cookie is
Secure when the browser spoke https (directly, or through a trusted proxy) or when configured."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from runledger.application.web.render import HEADERS
from tests.support.api_support import (
    Api,
    Opener,
    api_fixture,
    api_rl_fixture,
    bearer,
    serving,
    shard_fixture,
)
from tests.support.console_support import (
    Browsing,
    browser_fixture,
    browsing_fixture,
    live_server,
    unfrozen_clock_fixture,
)

__all__ = [
    "api_fixture",
    "api_rl_fixture",
    "browser_fixture",
    "browsing_fixture",
    "shard_fixture",
    "unfrozen_clock_fixture",
]

PROXY = "10.0.0.2"


def session_cookie(client: TestClient, **headers: str) -> str:
    """The Set-Cookie of the console's session, as the sign-in page sets it."""
    answer = client.get("/signin", headers=headers)
    assert answer.status_code == 200, answer.text
    cookie: str = answer.headers["set-cookie"]
    assert cookie.startswith("runledger_session="), cookie
    return cookie.lower()


def is_secure(cookie: str) -> bool:
    return "secure" in [flag.strip() for flag in cookie.split(";")[1:]]


@pytest.fixture(name="behind_proxy")
def behind_proxy_fixture(opened: Opener) -> Iterator[Api]:
    served = serving(opened(trusted_proxies=(PROXY,)))
    with served.client:
        yield served


def test_readiness_without_a_token_says_only_ready_or_not(api: Api) -> None:
    with live_server(api.client.app) as url:
        anyone = httpx.get(f"{url}/readyz", timeout=30)
        assert anyone.status_code == 200
        assert anyone.json() == {"ready": True}
        wrong = httpx.get(f"{url}/readyz", headers=bearer("rl_not-a-token"), timeout=30)
        assert wrong.json() == {"ready": True}
        for role in ("viewer", "operator", "admin"):
            told = httpx.get(f"{url}/readyz", headers=bearer(api.secrets[role]), timeout=30)
            checks = {c["name"]: c for c in told.json()["checks"]}
            assert set(checks) == {"store", "projections"} and checks["store"]["ok"]
            assert re.match(r"(SQLite file|PostgreSQL at) ", checks["store"]["detail"])


def test_the_docs_are_served_by_runledger_under_a_content_security_policy(api: Api) -> None:
    docs = api.get("/docs", None)
    assert docs.status_code == 200
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", docs.text), "an external URL"
    policy = docs.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    for inline in re.findall(r"<script>(.*?)</script>", docs.text, re.DOTALL):
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy  # the page's own start, and only by its hash
    assets = re.findall(r'(?:src|href)="(/[^"]+)"', docs.text)
    assert len(assets) == 3  # the script, the style sheet, the icon
    for asset in assets:
        answer = api.get(asset, None)
        assert answer.status_code == 200, asset
        assert answer.headers["content-type"].split(";")[0] in (
            "text/javascript",
            "text/css",
            "image/svg+xml",
        )
    script = next(a for a in assets if a.endswith(".js"))
    assert "SwaggerUIBundle" in api.get(script, None).text
    assert api.get("/redoc", None).status_code == 404  # off: it would load from a CDN too


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # the page is the same on both
def test_swagger_ui_runs_in_chromium_under_its_policy_asking_no_other_origin(
    browsing: Browsing,
) -> None:
    page = browsing.open()
    said: list[str] = []
    page.on("console", lambda message: said.append(f"{message.type}: {message.text}"))
    page.on("request", lambda r: None if r.url.startswith(browsing.url) else said.append(r.url))
    page.goto(browsing.url + "/docs")
    page.wait_for_selector(".opblock")
    assert page.locator(".opblock").count() > 30
    assert said == []  # a CSP violation is a console error; another origin, a request


def test_the_docs_policy_is_the_consoles_with_only_the_start_script_and_data_images(
    api: Api,
) -> None:
    console = dict(part.split(" ", 1) for part in HEADERS["Content-Security-Policy"].split("; "))
    docs = api.get("/docs", None).headers["content-security-policy"]
    policy = dict(part.split(" ", 1) for part in docs.split("; "))
    assert set(policy) == set(console)
    for directive, value in console.items():
        extra = policy[directive].removeprefix(value).split()
        allowed = {"script-src": "'sha256-", "img-src": "data:"}.get(directive)
        assert all(allowed and e.startswith(allowed) for e in extra), (directive, extra)


def test_the_cookie_is_not_secure_over_plain_http(api: Api) -> None:
    assert not is_secure(session_cookie(api.client))


def test_the_cookie_is_secure_over_https(api: Api) -> None:
    over_tls = TestClient(api.client.app, base_url="https://runledger.test")
    cookie = session_cookie(over_tls)
    assert is_secure(cookie) and "httponly" in cookie and "samesite=strict" in cookie


def test_the_cookie_is_secure_when_a_trusted_proxy_says_https(behind_proxy: Api) -> None:
    app = behind_proxy.client.app
    proxy = TestClient(app, client=(PROXY, 443))
    assert is_secure(session_cookie(proxy, **{"X-Forwarded-Proto": "https"}))
    assert not is_secure(session_cookie(proxy, **{"X-Forwarded-Proto": "http"}))
    stranger = TestClient(app, client=("10.0.0.7", 443))
    assert not is_secure(session_cookie(stranger, **{"X-Forwarded-Proto": "https"}))


def test_the_cookie_is_secure_everywhere_when_configured(opened: Opener) -> None:
    served = serving(opened(cookie_secure=True))
    with served.client:
        assert is_secure(session_cookie(served.client))
        flags = [f.strip() for f in session_cookie(served.client).split(";")[1:]]
        assert flags.count("secure") == 1
