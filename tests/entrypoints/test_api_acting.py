"""The routes that act on runs, through the real app, on an SQLite file and on PostgreSQL: advance,
cancel with and without cleanup, abort with a reason, a manual cleanup answering its summary;
their refusals (409 for a run's state, 404, 422 naming the field, never a 500); and the actor,
always the token's person, never a name the body gives.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID, uuid4

import pytest

from tests.support.api_support import (
    DOWN,
    SHARD_SPAWN,
    Api,
    Shard,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)
from tests.support.playing import Clock, phase, spec, step


def two_phases() -> dict[str, Any]:
    return spec(
        phase("p1", step("spawn", SHARD_SPAWN, count=1), advance="manual"),
        phase("p2", step("more", SHARD_SPAWN, count=1)),
    )


def log_lines(api: Api, run: UUID, kind: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = api.get(f"/admin/events/runs/{run}/log").json()["items"]
    return [line for line in lines if line["kind"] == kind]


def actors(api: Api, run: UUID, event: str) -> list[str | None]:
    lines = api.get(f"/admin/events/runs/{run}/replay").json()["lines"]
    return [line["actor"] for line in lines if line["event"] == event]


def ended(api: Api) -> UUID:
    """A run whose step is done, aborted by alice."""
    run = api.start(shard_run(1, advance="manual"))
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "rain"})
    assert answer.status_code == 200, answer.text
    return run


def test_a_person_advances_a_manual_phase_in_their_name(api: Api) -> None:
    run = api.start(two_phases())
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/advance", "operator")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"run_id": str(run), "message": "advanced"}
    [line] = log_lines(api, run, "run.phase_advanced")
    assert line["detail"] == {"phase": 1, "by": "alice"}


def test_a_phase_with_steps_unfinished_is_not_advanced(api: Api) -> None:
    run = api.start(two_phases())
    answer = api.post(f"/admin/events/runs/{run}/advance", "operator")
    assert answer.status_code == 409
    assert answer.json()["detail"] == "Phase p1 has steps still to finish"


def test_a_cancel_with_cleanup_gives_everything_back(api: Api, shard: Shard) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/cancel", "operator")
    assert answer.status_code == 200, answer.text
    assert answer.json()["run"]["status"] == "cancelled"
    assert answer.json()["run"]["ended_by"] == "alice"
    tick(api.rl)
    assert shard.reverts == [f"{run}:spawn"]
    assert api.run(run)["run"]["cleanup_status"] == "complete"


def test_an_abort_records_its_reason_and_the_token_s_person(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "a storm"})
    assert answer.status_code == 200, answer.text
    summary = answer.json()["run"]
    assert (summary["status"], summary["end_reason"], summary["ended_by"]) == (
        "aborted",
        "a storm",
        "alice",
    )
    assert actors(api, run, "Aborted") == ["alice"]
    assert actors(api, run, "Started") == ["alice"]


def test_a_body_cannot_name_the_actor(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    tick(api.rl)
    for path, body in (
        ("abort", {"reason": "rain", "by": "mallory"}),
        ("cancel", {"cleanup": False, "by": "mallory"}),
        ("cancel", {"actor": "mallory"}),
    ):
        answer = api.post(f"/admin/events/runs/{run}/{path}", "operator", json=body)
        assert answer.status_code == 422, (path, body, answer.text)
        assert answer.json()["detail"][0]["type"] == "extra_forbidden"
    assert api.run(run)["run"]["status"] == "running"
    sneaky = {**shard_run(1), "by": "mallory"}
    answer = api.post("/admin/events/runs", "operator", json=sneaky)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == ["body", "by"]
    assert "mallory" not in json.dumps(api.get("/admin/events/runs").json())


def test_acting_on_a_run_that_has_ended_is_409(api: Api) -> None:
    run = ended(api)
    for action in ("advance", "cancel", "abort"):
        body = {"reason": "again"} if action == "abort" else None
        answer = api.post(f"/admin/events/runs/{run}/{action}", "operator", json=body)
        assert answer.status_code == 409, (action, answer.text)
        assert "ended" in answer.json()["detail"], action


def test_advancing_an_ended_run_says_it_ended_even_with_steps_unfinished(api: Api) -> None:
    run = api.start(two_phases())
    api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "rain"})
    answer = api.post(f"/admin/events/runs/{run}/advance", "operator")
    assert answer.status_code == 409, answer.text
    assert "ended" in answer.json()["detail"], answer.json()["detail"]


def test_a_cleanup_while_the_run_is_running_is_409(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/cleanup", "operator")
    assert answer.status_code == 409
    assert "still running" in answer.json()["detail"]


def test_a_manual_cleanup_answers_its_summary_in_the_operator_s_name(
    api: Api, shard: Shard, clock: Clock
) -> None:
    shard.revert_answer = DOWN
    run = api.start(shard_run(2))
    tick(api.rl, 2)
    clock.advance(120)
    tick(api.rl)
    assert api.run(run)["run"]["cleanup_status"] == "incomplete"
    shard.revert_answer = None
    answer = api.post(f"/admin/events/runs/{run}/cleanup", "operator")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "run_id": str(run),
        "by": "alice",
        "attempted": 2,
        "reverted": 2,
        "drifted": 0,
        "failed": 0,
        "remaining": 0,
        "cleanup_status": "complete",
        "held": [],
    }
    [retry] = log_lines(api, run, "cleanup.retry")
    assert retry["detail"] == {"by": "alice", "resources": 2}


def test_acting_on_an_unknown_run_is_404(api: Api) -> None:
    for action in ("advance", "cancel", "abort", "cleanup"):
        body = {"reason": "why"} if action == "abort" else None
        answer = api.post(f"/admin/events/runs/{uuid4()}/{action}", "operator", json=body)
        assert answer.status_code == 404, (action, answer.text)


def test_an_abort_without_a_good_reason_is_422_naming_it(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    for body in ({"reason": ""}, {}, {"reason": 7}, {"reason": "x" * 10_001}, {"why": "rain"}):
        answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["detail"][0]["loc"][-1] in ("reason", "why"), body
    assert api.run(run)["run"]["status"] == "running"


BAD_SPECS: list[tuple[str, str]] = [
    (
        '{"name":"x","phases":[{"id":"p","steps":[{"id":"s","action":"shard.spawn",'
        '"params":{"note":"a\\u0000b"}}]}]}',
        "body.phases.0.steps.0.params.note",
    ),
    (
        '{"name":"x","phases":[{"id":"p","steps":[{"id":"s","action":"shard.spawn",'
        '"params":{"count":NaN}}]}]}',
        "body.phases.0.steps.0.params.count",
    ),
    (
        '{"name":"x","phases":[{"id":"p","steps":[{"id":"s","action":"shard.spawn",'
        '"params":{"count":1e999}}]}]}',
        "body.phases.0.steps.0.params.count",
    ),
    (
        '{"name":"' + "x" * 100_000 + '","phases":[{"id":"p","steps":[{"id":"s",'
        '"action":"shard.spawn"}]}]}',
        "body.name",
    ),
    ('{"name":"x","phases":[]}', "body.phases"),
    ("[]", "body"),
    ("not json", "body"),
]


def test_a_bad_spec_is_422_naming_the_field_and_starts_nothing(api: Api) -> None:
    headers = {**api.headers("operator"), "content-type": "application/json"}
    for raw, field in BAD_SPECS:
        answer = api.client.post("/admin/events/runs", content=raw, headers=headers)
        assert answer.status_code == 422, (raw[:80], answer.text)
        where = ".".join(str(p) for p in answer.json()["detail"][0]["loc"])
        assert where == field or where.startswith(f"{field}."), (raw[:80], where)
    assert api.get("/admin/events/runs").json()["items"] == []


def test_a_well_formed_spec_the_modules_refuse_is_409_naming_the_field(api: Api) -> None:
    spec = {"name": "x", "phases": [{"id": "p", "steps": [{"id": "s", "action": "nobody.has"}]}]}
    answer = api.post("/admin/events/runs", "operator", json=spec)
    assert answer.status_code == 409, answer.text
    said = answer.json()["detail"]
    assert said == 'phases.0.steps.0.action: no module registers "nobody.has"'
    assert api.get("/admin/events/runs").json()["items"] == []


def test_an_act_that_loses_a_race_with_another_writer_is_a_409_and_the_other_write_stands(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner in another process cancels the run between the request's read and its save:
    the store refuses the stale save, and the API says so in one sentence, not a 500."""
    run = api.start(shard_run(1, advance="manual"))
    repository = api.rl.app.repository
    read = repository.get

    def read_then_raced(aggregate_id: UUID, *args: Any, **kwargs: Any) -> Any:
        found = read(aggregate_id, *args, **kwargs)
        if aggregate_id == run and not raced:
            other: Any = read(aggregate_id)
            other.cancel("bea", True, api.rl.clock())
            api.rl.app.save(other)
            raced.append(other)
        return found

    raced: list[Any] = []
    monkeypatch.setattr(repository, "get", read_then_raced)
    answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "a storm"})
    assert answer.status_code == 409, answer.text
    said = answer.json()["detail"]
    assert said == "another writer changed this at the same moment; try again"
    monkeypatch.undo()
    summary = api.get(f"/admin/events/runs/{run}", "viewer").json()["run"]
    assert (summary["status"], summary["ended_by"]) == ("cancelled", "bea")


def test_concurrent_acts_on_one_run_in_one_server_end_it_once_and_answer_no_5xx(api: Api) -> None:
    """No write lock: requests in one process write at once, as other processes do, and the
    store decides. One act ends the run; the others are told why, in one sentence each."""
    run = api.start(shard_run(1, advance="manual"))
    acts = [
        ("abort", {"reason": f"storm {n}"}) if n % 2 else ("cancel", {"cleanup": True})
        for n in range(8)
    ]

    def act(name: str, body: dict[str, Any]) -> int:
        answer = api.post(f"/admin/events/runs/{run}/{name}", "operator", json=body)
        assert answer.status_code < 500, answer.text
        return answer.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda a: act(*a), acts))
    assert codes.count(200) == 1 and set(codes) <= {200, 409}, codes
    ended = actors(api, run, "Aborted") + actors(api, run, "Cancelled")
    assert len(ended) == 1
