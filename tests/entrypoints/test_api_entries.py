"""Finding entries by ref, and a run's replay of one entry, through the real app on an SQLite
file and on PostgreSQL: what `runledger step REF` and `replay --entry` ask a server. A viewer
may read both; a ref no store can hold is a 422 naming the field; a ref that names nothing is an
empty page."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from runledger.domain.values import MAX_TEXT
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
)
from tests.support.playing import made, makes, play
from tests.support.world import World

ENTRIES = "/admin/entries"


def named(api: Api, ref: str, **asked: object) -> dict[str, Any]:
    answer = api.get(ENTRIES, "viewer", params={"ref": ref, **asked})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def ids(page: dict[str, Any]) -> list[UUID]:
    return [UUID(item["entry_id"]) for item in page["items"]]


def test_a_ref_or_kind_ref_finds_the_entries_of_every_run_it_names_oldest_first(
    world: World, api: Api
) -> None:
    first = play(api.rl, makes("spawn", "c1", "c2"), name="first")
    again = play(api.rl, makes("spawn", "c1"), name="again")
    both = made(first, "spawn", "c1") + made(again, "spawn", "c1")
    for ref in ("c1", "creature:c1"):
        page = named(api, ref)
        assert (ids(page), page["next_cursor"]) == (both, None)
    assert ids(named(api, "c2")) == made(first, "spawn", "c2")
    one = named(api, "c1", limit=1)
    assert (ids(one), one["next_cursor"]) == (both[:1], "1")
    rest = named(api, "c1", limit=1, cursor="1")
    assert (ids(rest), rest["next_cursor"]) == (both[1:], None)
    [entry] = named(api, "c2")["items"]
    assert (entry["run_id"], entry["name"], entry["state"]) == (str(first), "creature:c2", "live")


def test_a_ref_that_names_nothing_is_an_empty_page(world: World, api: Api) -> None:
    play(api.rl, makes("spawn", "c1"))
    for ref in ("c9", "zone:c1", "creature:", ""):
        assert named(api, ref) == {"items": [], "next_cursor": None}, ref


def test_a_ref_no_store_can_hold_or_none_at_all_is_422_naming_the_field(api: Api) -> None:
    for params in ({"ref": "c\x001"}, {"ref": "c" * (MAX_TEXT + 1)}, {}):
        answer = api.get(ENTRIES, "viewer", params=params)
        assert answer.status_code == 422, (params, answer.text)
        [refused] = answer.json()["detail"]
        assert refused["loc"] == ["query", "ref"], answer.text


def test_a_replay_of_one_entry_reads_the_run_and_that_entry(world: World, api: Api) -> None:
    run = play(api.rl, makes("spawn", "c1", "c2"))
    replay = f"/admin/events/runs/{run}/replay"
    whole = api.get(replay, "viewer").json()
    assert {e["name"] for e in whole["entries"]} >= {"creature:c1", "creature:c2"}
    for entry in ("c1", "creature:c1"):
        answer = api.get(replay, "viewer", params={"entry": entry})
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert [e["name"] for e in found["entries"]] == ["creature:c1"]
        assert {line["subject"] for line in found["lines"]} == {"run", "creature:c1"}
    missing = api.get(replay, "viewer", params={"entry": "c9"})
    assert missing.status_code == 404
    assert missing.json()["detail"] == f"run {run} has no entry 'c9'"
    refused = api.get(replay, "viewer", params={"entry": "c\x001"})
    assert refused.status_code == 422
    assert [r["loc"] for r in refused.json()["detail"]] == [["query", "entry"]]
