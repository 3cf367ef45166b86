"""What serves the runs, through the real app, on an SQLite file and on PostgreSQL: modules,
runners, projections, tokens (an admin issues and revokes; a revoked token is refused), and the
open routes a load balancer and a scraper call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from prometheus_client.parser import text_string_to_metric_families

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.application.test_projection_stuck import stuck_store
from tests.support.api_support import (
    PEOPLE,
    Api,
    Shard,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    bearer,
    serving,
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)
from tests.support.playing import phase, spec, step
from tests.support.world import World


@pytest.fixture
def sandboxed(store_url: str, tmp_path: Path) -> Iterator[Api]:
    """The app over a runledger that loaded the built-in sandbox module, as `serve` does."""
    settings = Settings.model_validate(
        {
            "database_url": store_url,
            "builtin_modules": "sandbox",
            "module_settings": {"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3")},
        }
    )
    with bootstrap(settings) as rl:
        served = serving(rl)
        with served.client:
            yield served


def test_modules_say_their_status_actions_and_leases(sandboxed: Api) -> None:
    answer = sandboxed.get("/admin/modules", "viewer")
    assert answer.status_code == 200, answer.text
    [sandbox] = answer.json()["items"]
    assert (sandbox["name"], sandbox["status"], sandbox["reason"]) == ("sandbox", "loaded", None)
    assert sandbox["actions"] == ["sandbox.spawn", "sandbox.zone"]
    assert sandbox["leases"] == ["sandbox.spawn_rate", "sandbox.weather"]


def test_an_admin_asks_a_module_what_is_still_there_and_is_named_on_what_it_settles(
    sandboxed: Api, tmp_path: Path
) -> None:
    body = spec(phase("p1", step("spawn", "sandbox.spawn", count=2), advance="manual"))
    run = sandboxed.start(body)
    tick(sandboxed.rl)
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    made = sorted(world.things())
    assert len(made) == 2
    world.vanish(made[0])  # gone from the world without a word to core

    path = "/admin/modules/sandbox/reconcile"
    assert sandboxed.post(path, "operator").status_code == 403
    answer = sandboxed.post(path, "admin")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "module": "sandbox",
        "asked": 2,
        "in_force": 1,
        "orphaned": 1,
        "expired": 0,
        "unanswered": 0,
    }
    groups = sandboxed.run(run)["entries"]
    entries = {e["ref"]: e["state"] for g in groups for e in g["entries"] if e["kind"] != "@step"}
    assert entries == {made[0]: "orphaned", made[1]: "live"}
    log = sandboxed.get(f"/admin/events/runs/{run}/log", "viewer").json()["items"]
    [orphaned] = [line for line in log if line["kind"] == "resource.orphaned"]
    assert orphaned["detail"]["asked_by"] == PEOPLE["admin"]

    again = sandboxed.post(path, "admin").json()
    assert (again["asked"], again["orphaned"]) == (1, 0)


def test_asking_a_module_not_loaded_here_is_404_naming_it(sandboxed: Api) -> None:
    for name in ("shard", "nul%00name", "%3Cb%3Ex"):
        answer = sandboxed.post(f"/admin/modules/{name}/reconcile", "admin")
        assert answer.status_code == 404, answer.text
        assert "is loaded in this process" in answer.json()["detail"]
    assert sandboxed.post("/admin/modules/sandbox/reconcile", None).status_code == 401


def test_runners_are_listed_from_their_records(api: Api) -> None:
    assert api.get("/admin/runners", "viewer").json()["items"] == []
    api.rl.runner("w1").join()
    [runner] = api.get("/admin/runners", "viewer").json()["items"]
    assert (runner["worker"], runner["state"]) == ("w1", "live")
    assert "shard.spawn" in runner["actions"]


def test_projections_say_their_position_and_lag(api: Api) -> None:
    api.start(shard_run(1, advance="manual"))
    found = api.get("/admin/projections", "viewer").json()["items"]
    names = [p["name"] for p in found]
    assert "runs" in names and names == sorted(names)
    head = api.rl.app.recorder.max_notification_id()
    for projection in found:
        assert projection["position"] + projection["lag"] == head
        assert (projection["stuck_at"], projection["error"]) == (None, None)


def test_a_token_says_whom_it_speaks_for(api: Api) -> None:
    for role, person in PEOPLE.items():
        assert api.get("/admin/me", role).json() == {"name": person, "role": role}


def test_an_admin_issues_lists_and_revokes_tokens(api: Api) -> None:
    answer = api.post("/admin/tokens", json={"name": "bob", "role": "operator"})
    assert answer.status_code == 201, answer.text
    issued = answer.json()
    assert (issued["name"], issued["role"]) == ("bob", "operator")
    bob = bearer(issued["secret"])
    assert api.client.get("/admin/me", headers=bob).json() == {"name": "bob", "role": "operator"}
    listed = {t["token_id"]: t for t in api.get("/admin/tokens").json()["items"]}
    assert listed[issued["token_id"]]["issued_by"] == "root"
    assert "secret" not in listed[issued["token_id"]]
    revoked = api.delete(f"/admin/tokens/{issued['token_id']}")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["revoked_at"] is not None
    refused = api.client.get("/admin/events/runs", headers=bob)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"


def test_token_refusals(api: Api) -> None:
    assert api.delete(f"/admin/tokens/{uuid4()}").status_code == 404
    assert api.delete("/admin/tokens/not-a-token").status_code == 422
    for body in ({"name": "bob", "role": "root"}, {"name": "", "role": "viewer"}, {"name": "bob"}):
        answer = api.post("/admin/tokens", json=body)
        assert answer.status_code == 422, (body, answer.text)
    issued = api.post("/admin/tokens", json={"name": "bob", "role": "viewer"}).json()
    assert api.delete(f"/admin/tokens/{issued['token_id']}").status_code == 200
    again = api.delete(f"/admin/tokens/{issued['token_id']}")
    assert again.status_code == 409, again.text


def test_health_and_readiness_need_no_token_and_say_more_to_one(api: Api) -> None:
    assert api.get("/healthz", None).json() == {"status": "ok"}
    ready = api.get("/readyz", None)
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"ready": True}  # nothing about the store without a token
    detailed = api.get("/readyz", "viewer")
    assert [c["name"] for c in detailed.json()["checks"]] == ["store", "projections"]


def test_a_stuck_projection_makes_the_process_not_ready_saying_where(
    world: World, api: Api
) -> None:
    """(``world`` first: its actions are registered before the app's runledger is built.)"""
    _, position, _, _ = stuck_store(api.rl)
    assert api.get("/readyz", None).json() == {"ready": False}
    ready = api.get("/readyz", "viewer")
    assert ready.status_code == 503, ready.text
    checks = {c["name"]: c for c in ready.json()["checks"]}
    assert (ready.json()["ready"], checks["store"]["ok"], checks["projections"]["ok"]) == (
        False,
        True,
        False,
    )
    assert f"cannot apply the event at position {position}" in checks["projections"]["detail"]
    assert api.get("/healthz", None).status_code == 200  # up, only not ready


def test_a_backlog_past_the_bound_is_not_ready_at_once_without_applying_it(
    store_url: str, shard: Shard, registry: Registry
) -> None:
    settings = Settings.model_validate({"database_url": store_url, "ready_lag": 1})
    with bootstrap(settings, registry) as rl:
        served = serving(rl)
        rl.projector.catch_up()  # the tokens are in their view: the backlog is the runs'
        with served.client:
            for n in range(3):
                rl.runs.start(shard_run(1, name=f"r{n}", advance="manual"))
            behind = rl.projector.behind()
            assert behind > 1
            assert served.get("/readyz", None).json() == {"ready": False}
            ready = served.get("/readyz", "viewer")
            assert ready.status_code == 503, ready.text
            checks = {c["name"]: c for c in ready.json()["checks"]}
            assert checks["projections"]["detail"] == f"{behind:,} events behind"
            assert rl.projector.behind() == behind  # the probe applied nothing
            rl.projector.catch_up()
            assert served.get("/readyz", None).status_code == 200


def test_metrics_count_runs_and_unresolved_entries_in_prometheus_text(
    api: Api, shard: Shard
) -> None:
    shard.revert_answer = {"ok": False, "error": "the shard is down"}
    api.start(shard_run(2))
    api.start(shard_run(1, advance="manual"))
    tick(api.rl, 2)
    answer = api.get("/metrics", None)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }
    runs = {labels: v for (name, labels), v in samples.items() if name == "runledger_runs"}
    assert runs[(("cleanup", "pending"), ("status", "completed"))] == 1
    assert runs[(("cleanup", "pending"), ("status", "running"))] == 1
    unresolved = {
        dict(labels)["state"]: v
        for (name, labels), v in samples.items()
        if name == "runledger_unresolved_entries"
    }
    assert unresolved["failing"] == 2
    assert any(name == "runledger_projection_lag" for name, _ in samples)
