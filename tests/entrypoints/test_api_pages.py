"""Every list the API answers is one envelope, `{items, next_cursor}`, paged by `limit` and an
opaque `cursor`; a cursor given out for one list is refused by another, naming the field."""

from __future__ import annotations

from typing import Any

from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

DEFS = "/admin/definitions"
LISTS = (
    "/admin/events/runs",
    DEFS,
    "/admin/occurrences",
    "/admin/modules",
    "/admin/runners",
    "/admin/projections",
    "/admin/tokens",
)


def listed(api: Api, path: str, **params: Any) -> dict[str, Any]:
    answer = api.get(path, "admin", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def every_page(api: Api, path: str, limit: int) -> list[list[Any]]:
    pages, cursor = [], None
    while True:
        page = listed(api, path, limit=limit, **({"cursor": cursor} if cursor else {}))
        pages.append(page["items"])
        if (cursor := page["next_cursor"]) is None:
            return pages


def test_every_list_answers_one_envelope(api: Api) -> None:
    api.start(shard_run(1, advance="manual"))
    for path in LISTS:
        assert set(listed(api, path)) == {"items", "next_cursor"}, path


def test_definitions_page_by_cursor_to_the_last(api: Api) -> None:
    for name in ("c", "a", "e", "b", "d"):
        answer = api.post(DEFS, "operator", json={"name": name, "spec": shard_run(1)})
        assert answer.status_code == 201, answer.text
    pages = every_page(api, DEFS, 2)
    assert [[d["name"] for d in page] for page in pages] == [["a", "b"], ["c", "d"], ["e"]]


def test_tokens_and_a_definitions_versions_page_too(api: Api) -> None:
    for name in ("bob", "carol", "dave"):
        assert api.post("/admin/tokens", json={"name": name, "role": "viewer"}).is_success
    everyone = [t["name"] for page in every_page(api, "/admin/tokens", 2) for t in page]
    assert {"bob", "carol", "dave"} <= set(everyone) and len(everyone) == len(set(everyone))
    assert api.post(DEFS, "operator", json={"name": "fair", "spec": shard_run(1)}).is_success
    assert api.post(f"{DEFS}/fair/publish", "operator").is_success
    assert every_page(api, f"{DEFS}/fair/versions", 1)[0][0]["version"] == 1


def test_a_cursor_from_another_list_or_made_up_is_refused_naming_it(api: Api) -> None:
    for name in ("a", "b"):
        assert api.post(DEFS, "operator", json={"name": name, "spec": shard_run(1)}).is_success
    cursor = listed(api, DEFS, limit=1)["next_cursor"]
    for path, bad in (("/admin/tokens", cursor), (DEFS, "bm9wZXwx"), (DEFS, "a+b"), (DEFS, "")):
        answer = api.get(path, "admin", params={"cursor": bad})
        assert answer.status_code == 422, (path, bad, answer.text)
        assert answer.json()["detail"][0]["loc"] == ["query", "cursor"], answer.text


def test_the_log_pages_back_with_the_same_cursor(api: Api) -> None:
    run = api.start(shard_run(2, advance="manual"))
    log = f"/admin/events/runs/{run}/log"
    whole = listed(api, log)
    pages = every_page(api, log, 1)
    assert [line for page in reversed(pages) for line in page] == whole["items"]
    assert whole["total"] == len(whole["items"]) and whole["run_id"] == str(run)
