"""A request on PostgreSQL whose process is not the projector waits for it, bounded by
RUNLEDGER_PROJECTION_WAIT_S: past it the process catches up itself, and when even that cannot
(a projector frozen mid-page holds the rows it must lock) the store's trouble (503 with
Retry-After), not a stale answer and not a 500. /readyz reads through the same hook."""

from __future__ import annotations

import psycopg
import pytest
from fastapi.testclient import TestClient

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.projections.role import ROLE_LOCK
from tests.application.test_one_projector import counted
from tests.support.recorded import AT, entry

pytestmark = pytest.mark.postgres


def test_a_request_whose_projector_froze_mid_page_is_a_503(pg_url: str, pg_admin: str) -> None:
    schema = pg_url.rsplit("schema=", 1)[1]
    settings = Settings(database_url=pg_url, projection_wait_s=0.3, store_timeout_s=1)
    with bootstrap(settings, Registry()) as rl, psycopg.connect(pg_admin) as frozen:
        # A projector frozen inside a page: it holds the role and the tracking rows' locks.
        frozen.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [ROLE_LOCK, schema])
        frozen.execute(f'SELECT name FROM "{schema}".rl_tracking FOR UPDATE')
        rl.app.save(entry("c1"))
        client = TestClient(create_app(rl), raise_server_exceptions=False)
        answer = client.get("/admin/events/runs", headers={"Authorization": "Bearer rl_no"})
        frozen.rollback()
    assert answer.status_code == 503, answer.text
    assert "did not reach position" in answer.json()["detail"]
    assert answer.headers["Retry-After"]


def test_readiness_in_a_process_that_is_not_the_projector_applies_nothing(pg_url: str) -> None:
    settings = Settings(database_url=pg_url)
    with bootstrap(settings, Registry()) as first, bootstrap(settings, Registry()) as second:
        first.queries.candidate_runs(AT, 3, 10)  # the first read: it takes the role
        applied = counted(second)
        second.app.save(entry("c1"))
        answer = TestClient(create_app(second)).get("/readyz")
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"ready": True}
        assert second.projector.behind() == 0  # fresh: the projector caught up for it
        assert applied == []
