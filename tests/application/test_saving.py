"""LedgerApp.save skips the library's runtime Protocol checks (application/store/saving.py).

It is a copy of the library's own save with one step replaced, so these tests pin the library's
text it was copied from: an eventsourcing upgrade that changes either method fails here until
someone compares the two again.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.application import Application, ProcessingEvent

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.resource import Resource
from runledger.domain.runlog import LogEntry

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

# sha256 of inspect.getsource(...) in eventsourcing 9.5.6, from which saving.save was copied.
PINNED = {
    "Application.save": "4e9747d14b8fd046df1b9b8ce688be89030978de0c04a632e6a7ec783dc7c5cc",
    "ProcessingEvent.collect_events": (
        "7e3a7e6b1abd2bef334f1ebe7015d887cf935916f87f3c7fbd75127907ab3488"
    ),
}


def digest(method: object) -> str:
    return hashlib.sha256(inspect.getsource(method).encode()).hexdigest()  # type: ignore[arg-type]


def test_the_library_save_is_still_the_one_ledger_app_copied() -> None:
    found = {
        "Application.save": digest(Application.save),
        "ProcessingEvent.collect_events": digest(ProcessingEvent.collect_events),
    }
    assert found == PINNED, (
        "eventsourcing's save changed: compare it with application/store/saving.py, then pin "
        "the new digests here"
    )


def entry() -> Resource:
    return Resource(uuid4(), "s", "creature", "c1", "m", "m.spawn", "k", {"n": 1}, None, None, AT)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LedgerApp]:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    rl = bootstrap(Settings(database_url=url), Registry())
    yield rl.app
    rl.close()


def test_an_aggregate_is_saved_without_the_protocol_checks(
    app: LedgerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the library's collect_events was asked")

    monkeypatch.setattr(ProcessingEvent, "collect_events", refuse)
    resource = entry()
    resource.claim_revert("w", AT, AT.replace(hour=13), 3)
    recordings = app.save(resource)
    assert [type(r.domain_event).__name__ for r in recordings] == ["Recorded", "RevertClaimed"]
    assert app.repository.get(resource.id).attempts == 1


def test_the_same_objects_store_the_same_events_as_the_library_save(app: LedgerApp) -> None:
    ours, theirs = entry(), entry()
    line = LogEntry(
        key=f"k|{uuid4()}", run_id=uuid4(), kind="cleanup.swept", detail={"a": 1}, at=AT
    )
    mine = app.save(ours, None, line)
    library = Application.save(app, theirs, None)
    assert [(type(r.domain_event), r.domain_event.originator_version) for r in mine] == [
        (Resource.Recorded, 1),
        (LogEntry.Written, 1),
    ]
    assert [(type(r.domain_event), r.domain_event.originator_version) for r in library] == [
        (Resource.Recorded, 1)
    ]
    assert [r.notification.topic for r in mine][:1] == [r.notification.topic for r in library]


def test_a_bare_event_is_still_collected_the_library_way(app: LedgerApp) -> None:
    resource = entry()
    app.save(resource)
    resource.claim_revert("w", AT, AT.replace(hour=13), 3)
    (claimed,) = resource.collect_events()
    recordings = app.save(claimed)
    assert [r.domain_event for r in recordings] == [claimed]
    assert app.repository.get(resource.id).claim_worker == "w"
