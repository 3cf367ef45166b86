"""Every list the API answers is one envelope, `{items, next_cursor}`, paged by `limit` and a
`cursor` to pass back; any cursor of the documented form reads a page, any other is refused
naming the field."""

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


def test_a_cursor_of_the_documented_form_reads_a_page_any_other_is_refused_naming_it(
    api: Api,
) -> None:
    for name in ("a", "b"):
        assert api.post(DEFS, "operator", json={"name": name, "spec": shard_run(1)}).is_success
    assert listed(api, DEFS, cursor="1")["items"][0]["name"] == "b"
    assert listed(api, DEFS, cursor="99999") == {"items": [], "next_cursor": None}
    run = api.start(shard_run(1, advance="manual"))
    assert listed(api, f"/admin/events/runs/{run}/log", cursor="9" * 19)["items"]
    made_up = "1764000000.5_00000000-0000-0000-0000-000000000000"
    assert listed(api, "/admin/events/runs", cursor=made_up)["items"] == []
    for path, bad in (
        (DEFS, "0"),
        (DEFS, "a+b"),
        (DEFS, ""),
        ("/admin/tokens", "100000"),
        (f"/admin/events/runs/{run}/log", "9" * 20),
        ("/admin/events/runs", "1e999_x"),
    ):
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
