"""Idempotent writes (SPEC "Idempotent writes"), on an SQLite file and on PostgreSQL: under an
Idempotency-Key the same request from the same person is answered the first answer (status and
body) and changes nothing more; a start answers the same run, whose id comes from the key; the
same key with another body, or on another route, is refused (409); another person's same key
is another key; a bad header is refused naming it; without the header nothing changes. The
creatures in the sandbox's own tables are made once, however the request is repeated: one after
the other, three at once against a real server, or across two servers on one store."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from fastapi.testclient import TestClient

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.domain.keyed import KeyAnswered, KeyedRequest, fingerprint, run_id_for_key
from tests.application.test_start_checks import run_ids
from tests.entrypoints.test_api_serve import Served, env, given_back, served
from tests.entrypoints.test_cli_json import Cli, cli_fixture, ended_incomplete
from tests.support.api_support import Api, bearer, serving, tick
from tests.support.playing import START, phase, spec, step
from tests.support.reading import written

__all__ = ["cli_fixture", "env", "served"]

RUNS = "/admin/events/runs"
KEY = "Idempotency-Key"


def creatures(count: int = 3, name: str = "fair") -> dict[str, Any]:
    return spec(
        phase("p1", step("spawn", "sandbox.spawn", count=count), advance="manual"), name=name
    )


def keyed(key: str) -> dict[str, str]:
    return {KEY: key}


@pytest.fixture(name="world")
def world_fixture(tmp_path: Path) -> SandboxWorld:
    return SandboxWorld(tmp_path / "sandbox.sqlite3")


def sandbox_settings(store_url: str, world: SandboxWorld) -> Settings:
    return Settings.model_validate(
        {
            "database_url": store_url,
            "builtin_modules": "sandbox",
            "module_settings": {"RUNLEDGER_SANDBOX_PATH": str(world.path)},
            "retry_delays_s": (0.0,),
        }
    )


@pytest.fixture
def api(store_url: str, world: SandboxWorld) -> Iterator[Api]:
    """The app over a runledger that loaded the built-in sandbox, as `serve` does."""
    with bootstrap(sandbox_settings(store_url, world)) as rl:
        found = serving(rl)
        with found.client:
            yield found


def post(api: Api, path: str, key: str | None, who: str = "operator", **kwargs: Any) -> Any:
    headers = api.headers(who) | ({} if key is None else keyed(key))
    return api.client.post(path, headers=headers, **kwargs)


def test_a_repeated_start_under_one_key_answers_the_first_answer_and_makes_one_run(
    api: Api, world: SandboxWorld
) -> None:
    first = post(api, RUNS, "start-1", json=creatures())
    assert first.status_code == 201, first.text
    run = UUID(first.json()["run"]["run_id"])
    assert run == run_id_for_key("alice", "start-1"), "the run's id comes from the key"
    tick(api.rl)
    head = written(api.rl)

    again = post(api, RUNS, "start-1", json=json.loads(json.dumps(creatures())))

    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert written(api.rl) == head, "a repeat writes nothing"
    assert run_ids(api.rl) == [run]
    assert len(world.things()) == 3, "the creatures were made once"


def test_the_same_key_with_another_body_or_route_is_refused_and_another_person_s_is_another_key(
    api: Api, world: SandboxWorld
) -> None:
    first = post(api, RUNS, "k", json=creatures())
    run = UUID(first.json()["run"]["run_id"])
    head = written(api.rl)

    other = post(api, RUNS, "k", json=creatures(count=4))
    assert other.status_code == 409, other.text
    said = other.json()["detail"]
    assert "idempotency key 'k' was used at" in said
    assert f"for POST {RUNS} with another body" in said
    elsewhere = post(api, f"{RUNS}/{run}/cancel", "k", json={"cleanup": True})
    assert elsewhere.status_code == 409, elsewhere.text
    assert "was used at" in elsewhere.json()["detail"]
    assert f"for POST {RUNS};" in elsewhere.json()["detail"]
    assert written(api.rl) == head and api.run(run)["run"]["status"] == "running"

    root = post(api, RUNS, "k", "admin", json=creatures())  # root's "k" is not alice's
    assert root.status_code == 201, root.text
    second = UUID(root.json()["run"]["run_id"])
    assert second == run_id_for_key("root", "k") != run
    assert sorted(run_ids(api.rl)) == sorted([run, second])
    tick(api.rl)
    assert len(world.things()) == 6


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("x" * 201, "is 201 characters; at most 200 are accepted"),
        ("a\tb", "must not contain control characters"),
    ],
)
def test_a_bad_key_is_refused_naming_the_header_and_writes_nothing(
    api: Api, value: str, problem: str
) -> None:
    head = written(api.rl)
    answer = post(api, RUNS, value, json=creatures())
    assert answer.status_code == 422, answer.text
    [found] = answer.json()["detail"]
    assert found["loc"] == ["header", KEY]
    assert found["msg"] == f"{KEY} {problem}"
    assert written(api.rl) == head


def test_without_a_key_a_repeat_starts_another_run_as_before(api: Api) -> None:
    first = post(api, RUNS, None, json=creatures())
    second = post(api, RUNS, None, json=creatures())
    assert first.status_code == second.status_code == 201
    assert first.json()["run"]["run_id"] != second.json()["run"]["run_id"]


def test_a_refused_start_keeps_no_key_so_the_corrected_request_may_use_it(
    api: Api, world: SandboxWorld
) -> None:
    head = written(api.rl)
    refused = post(api, RUNS, "fix-me", json=creatures(count=0))  # the module's params refuse
    assert refused.status_code == 409, refused.text
    assert written(api.rl) == head, "a refusal writes nothing, not even its key"
    started = post(api, RUNS, "fix-me", json=creatures())
    assert started.status_code == 201, started.text


def test_acts_on_a_run_answer_their_first_answer_again(api: Api) -> None:
    run = api.start(creatures())
    tick(api.rl)
    advanced = post(api, f"{RUNS}/{run}/advance", "adv")
    assert advanced.status_code == 200, advanced.text
    assert post(api, f"{RUNS}/{run}/advance", "adv").content == advanced.content
    assert post(api, f"{RUNS}/{run}/advance", None).status_code == 409  # without a key: ended

    other = api.start(creatures(name="other"))
    cancelled = post(api, f"{RUNS}/{other}/cancel", "c", json={"cleanup": False})
    assert cancelled.status_code == 200, cancelled.text
    again = post(api, f"{RUNS}/{other}/cancel", "c", json={"cleanup": False})
    assert (again.status_code, again.content) == (200, cancelled.content)

    cleaned = post(api, f"{RUNS}/{other}/cleanup", "clean")
    assert post(api, f"{RUNS}/{other}/cleanup", "clean").content == cleaned.content


def test_definitions_and_occurrences_are_made_once_under_a_key(api: Api) -> None:
    body = {"name": "fair", "spec": creatures()}
    created = post(api, "/admin/definitions", "def", json=body)
    assert created.status_code == 201, created.text
    again = post(api, "/admin/definitions", "def", json=body)
    assert (again.status_code, again.content) == (201, created.content)
    verified = post(api, "/admin/definitions/fair/verify", "v")
    assert post(api, "/admin/definitions/fair/verify", "v").content == verified.content
    published = post(api, "/admin/definitions/fair/publish", "p")
    assert post(api, "/admin/definitions/fair/publish", "p").content == published.content
    assert len(api.get("/admin/definitions/fair/versions").json()["items"]) == 1
    at = {"at": (api.rl.clock().replace(microsecond=0)).isoformat()}
    scheduled = post(api, "/admin/definitions/fair/occurrences", "s", json=at)
    assert scheduled.status_code == 201, scheduled.text
    assert post(api, "/admin/definitions/fair/occurrences", "s", json=at).content == (
        scheduled.content
    )
    assert len(api.get("/admin/definitions/fair/occurrences").json()["items"]) == 1


def test_a_token_is_issued_once_and_its_secret_is_never_kept_to_give_again(api: Api) -> None:
    body = {"name": "bob", "role": "viewer"}
    issued = post(api, "/admin/tokens", "t", "admin", json=body)
    assert issued.status_code == 201, issued.text
    token = issued.json()["token_id"]
    again = post(api, "/admin/tokens", "t", "admin", json=body)
    assert again.status_code == 409, again.text
    assert f"the secret of token {token} (bob, viewer) is shown once" in again.json()["detail"]
    assert [t["name"] for t in api.get("/admin/tokens").json()["items"]].count("bob") == 1
    secret = issued.json()["secret"]
    stored = api.rl.app.recorder.select_notifications(start=1, limit=10_000)
    assert stored and all(secret.encode() not in bytes(n.state) for n in stored), "nowhere kept"


def test_two_servers_on_one_store_make_one_run_of_three_concurrent_repeats(
    store_url: str, world: SandboxWorld
) -> None:
    settings = sandbox_settings(store_url, world)
    with bootstrap(settings) as one, bootstrap(settings) as two:
        first = serving(one)
        clients = [first.client, TestClient(create_app(two), raise_server_exceptions=False)]
        headers = bearer(first.secrets["operator"]) | keyed("across")
        go = threading.Barrier(3)

        def send(i: int) -> tuple[int, bytes]:
            go.wait()
            answer = clients[i % 2].post(RUNS, json=creatures(), headers=headers)
            return answer.status_code, answer.content

        with clients[0], clients[1], ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(send, range(3)))
        assert {status for status, _ in answers} == {201}, answers
        assert len({body for _, body in answers}) == 1
        assert run_ids(one) == [run_id_for_key("alice", "across")]
        tick(one)
        assert len(world.things()) == 3


@pytest.mark.slow
def test_three_concurrent_repeats_against_a_real_server_make_one_run_and_three_same_answers(
    served: Served, store_url: str, world: SandboxWorld
) -> None:
    headers = bearer(served.secret) | keyed("retry-safely")
    body = creatures()
    go = threading.Barrier(3)

    def send(_: int) -> httpx.Response:
        with httpx.Client(base_url=served.client.base_url, timeout=30) as client:
            go.wait()
            return client.post(RUNS, json=body, headers=headers)

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(send, range(3)))

    assert [a.status_code for a in answers] == [201, 201, 201], [a.text for a in answers]
    assert len({a.content for a in answers}) == 1, "three identical answers"
    run = UUID(answers[0].json()["run"]["run_id"])
    assert run == run_id_for_key("alice", "retry-safely")
    served.until("the creatures were made", lambda: len(world.things()) == 3)
    again = served.client.post(RUNS, json=body, headers=headers)
    assert (again.status_code, again.content) == (201, answers[0].content)
    with bootstrap(Settings(database_url=store_url), Registry()) as reader:
        assert run_ids(reader) == [run]
    assert len(world.things()) == 3, "made once"
    assert not given_back(served, served.secret, run, "complete")  # manual phase: still running


def test_the_cli_starts_once_under_a_key_and_refuses_it_for_another_spec(
    cli: Cli, tmp_path: Path, store_url: str
) -> None:
    (tmp_path / "fair.json").write_text(json.dumps(creatures()))
    (tmp_path / "other.json").write_text(json.dumps(creatures(count=4)))
    first = cli("start", "fair.json", "--idempotency-key", "nightly-1", "--json")
    again = cli("start", "fair.json", "--idempotency-key", "nightly-1", "--json")
    assert again.out == first.out
    run = UUID(json.loads(first.out)["run"]["run_id"])
    assert cli("start", "fair.json", "--idempotency-key", "nightly-1").out.strip() == str(run)
    other = cli("start", "other.json", "--idempotency-key", "nightly-1", code=1)
    assert "idempotency key 'nightly-1' was used at" in other.out
    assert cli("start", "fair.json", "--idempotency-key", "", code=2).out.startswith(
        "runledger: --idempotency-key must not be empty"
    )
    cli("tick")
    cancelled = cli("cancel", str(run), "--by", "bea", "--idempotency-key", "c1", "--json")
    assert cli("cancel", str(run), "--by", "bea", "--idempotency-key", "c1", "--json").out == (
        cancelled.out
    )
    with bootstrap(Settings(database_url=store_url), Registry()) as reader:
        assert run_ids(reader) == [run]
    assert len(SandboxWorld(tmp_path / "sandbox.sqlite3").things()) == 3


def test_the_cli_defines_schedules_issues_and_retries_cleanup_once_under_a_key(
    cli: Cli, tmp_path: Path, store_url: str
) -> None:
    (tmp_path / "fair.json").write_text(json.dumps(creatures(name="fair")))
    twice = [
        ("def", "create", "fair", "-f", "fair.json", "--by", "bea"),
        ("def", "verify", "fair", "--by", "bea"),
        ("def", "publish", "fair", "--by", "bea"),
        ("def", "schedule", "fair", "--at", "2030-01-01T00:00:00Z", "--by", "bea"),
    ]
    for n, args in enumerate(twice):
        first = cli(*args, "--idempotency-key", f"k{n}", "--json")
        assert cli(*args, "--idempotency-key", f"k{n}", "--json").out == first.out, args
    [occurrence] = json.loads(cli("def", "occurrences", "fair", "--json").out)
    assert json.loads(cli("def", "versions", "fair", "--json").out)[-1]["version"] == 1
    stop = ("def", "cancel", occurrence["occurrence_id"], "--by", "bea", "--idempotency-key", "c")
    assert cli(*stop, "--json").out == cli(*stop, "--json").out
    elsewhere = cli("def", "verify", "fair", "--by", "bea", "--idempotency-key", "k0", code=1)
    assert "idempotency key 'k0' was used at" in elsewhere.out
    issued = json.loads(cli("token", "create", "zoe", "--idempotency-key", "t1", "--json").out)
    refused = cli("token", "create", "zoe", "--idempotency-key", "t1", code=1).out
    assert f"the secret of token {issued['token_id']} (zoe, viewer) is shown once" in refused
    tokens = json.loads(cli("token", "list", "--json").out)
    assert [t["name"] for t in tokens].count("zoe") == 1, "issued once"
    run = ended_incomplete(cli, tmp_path, "gone")
    retry = ("cleanup", str(run), "--by", "bea", "--idempotency-key", "r1", "--json")
    first = json.loads(cli(*retry).out)
    assert (first["reverted"], first["cleanup_status"]) == (2, "complete")
    assert json.loads(cli(*retry).out) == first
    assert SandboxWorld(tmp_path / "sandbox.sqlite3").things() == {}, "given back in the world"
    ended_incomplete(cli, tmp_path, "lost")
    planned = json.loads(cli("cleanup", "--where", "cleanup=incomplete", "--plan", "--json").out)
    bulk = (
        "cleanup",
        "--where",
        "cleanup=incomplete",
        "--apply",
        planned["fingerprint"],
        "--by",
        "bea",
    )
    applied = cli(*bulk, "--idempotency-key", "b1", "--json").out
    assert cli(*bulk, "--idempotency-key", "b1", "--json").out == applied
    assert json.loads(applied)["runs"][0]["cleanup_status"] == "complete"
    plan = cli(
        "cleanup", "--where", "cleanup=incomplete", "--plan", "--idempotency-key", "p1", code=2
    )
    assert "--plan writes nothing and takes no --idempotency-key" in plan.out


# --- the key itself, without a store ----------------------------------------------------------


def test_the_same_request_is_the_same_whatever_its_key_order_or_spacing() -> None:
    one = fingerprint("POST", RUNS, json.loads('{"name": "a", "phases": [1, 2]}'))
    two = fingerprint("post", RUNS, json.loads('{"phases":[1,2],"name":"a"}'))
    assert one == two
    assert fingerprint("POST", RUNS, {"name": "b", "phases": [1, 2]}) != one
    assert fingerprint("POST", f"{RUNS}/x/cancel", {"name": "a", "phases": [1, 2]}) != one


def test_a_key_s_answer_is_kept_once() -> None:
    record = KeyedRequest(person="alice", key="k", request="POST /", fingerprint="f", at=START)
    record.answer(201, "{}", None, START)
    with pytest.raises(KeyAnswered):
        record.answer(201, "{}", None, START)
    assert record.id == KeyedRequest.create_id("alice", "k") != KeyedRequest.create_id("bob", "k")


def test_a_withheld_answer_keeps_no_body() -> None:
    record = KeyedRequest(person="root", key="t", request="POST /", fingerprint="f", at=START)
    record.answer(201, '{"secret": "rl_x"}', "its secret is shown once", START)
    assert (record.status, record.body, record.withheld) == (201, "", "its secret is shown once")
