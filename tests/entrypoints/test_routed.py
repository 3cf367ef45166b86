"""The routes are built once a process and serve every application made in it (routed.py): each
application still answers from its own store, through its own middleware."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.routed import add_routes
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from tests.support.api_support import Shard, serving, shard_run


def a_store(folder: Path, registry: Registry) -> Runledger:
    url = f"sqlite:///{folder / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    return bootstrap(Settings(database_url=url), registry)


def test_two_applications_share_the_routes_and_each_answers_from_its_own_store(
    tmp_path: Path,
) -> None:
    registry = Registry()
    Shard().install(registry)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = a_store(tmp_path / "a", registry), a_store(tmp_path / "b", registry)
    try:
        one, other = serving(first), serving(second)
        with one.client, other.client:
            api_routes = [r for r in one.client.app.routes if isinstance(r, APIRoute)]  # type: ignore[attr-defined]
            assert len(api_routes) > 50
            shared = {id(r) for r in other.client.app.routes}  # type: ignore[attr-defined]
            assert all(id(r) in shared for r in api_routes)

            run_id = one.start(shard_run(2, advance="manual"))
            listed = one.get("/admin/events/runs", "viewer")
            assert [r["run_id"] for r in listed.json()["items"]] == [str(run_id)]
            assert other.get("/admin/events/runs", "viewer").json()["items"] == []
            # Each application's tokens are its own store's: one's is no key to the other.
            refused = other.client.get("/admin/events/runs", headers=one.headers("viewer"))
            assert refused.status_code == 401
    finally:
        first.close()
        second.close()


def test_a_router_with_startup_handlers_is_refused_rather_than_losing_them() -> None:
    router = APIRouter(on_startup=[lambda: None])
    with pytest.raises(ValueError, match="include_router"):
        add_routes(FastAPI(), router)
