"""The eventsourcing library's own conformance cases (eventsourcing/tests/persistence.py), run
against what runledger puts in the library's place (issue 28): the transcoder our application
constructs (store/transcoding.py), and the PostgreSQL application recorder as ``open_app``
configures it (store/ledger_app.py): binary inserts, a last-in-first-out pool and, on a store
the current ``runledger init`` made, every save through ``rl_insert_events`` (store/pg_insert.py).

Each case runs in full, or is skipped alone with the difference of our design it trips on.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from unittest import skip

import psycopg
import pytest
from eventsourcing.persistence import Transcoder
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.sql import SQL, Identifier

from runledger.application.bootstrap import init_store
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, open_app
from runledger.application.store.pg_insert import FUNCTION
from runledger.application.store.transcoding import FastJSONTranscoder
from runledger.application.store.url import store_config
from tests.conftest import PG_ADMIN, drop_pg_url, new_pg_url


@contextmanager
def _without_pycryptodome() -> Iterator[None]:
    """The cases' module imports the library's AES cipher, so pycryptodome, which runledger
    does not install and no case here uses: it is imported over stand-ins, forgotten after
    (with the cipher module), so that nothing else can import them."""
    if importlib.util.find_spec("Crypto") is not None:
        yield
        return
    names = ["Crypto", "Crypto.Cipher", "Crypto.Cipher.AES", "Crypto.Cipher._mode_gcm"]
    stand_ins = {name: ModuleType(name) for name in names}
    vars(stand_ins["Crypto.Cipher"])["AES"] = stand_ins["Crypto.Cipher.AES"]
    vars(stand_ins["Crypto.Cipher.AES"])["key_size"] = (16, 24, 32)
    vars(stand_ins["Crypto.Cipher._mode_gcm"])["GcmMode"] = object
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name in [*names, "eventsourcing.cipher"]:
            sys.modules.pop(name, None)
        vars(sys.modules["eventsourcing"]).pop("cipher", None)


with _without_pycryptodome():
    from eventsourcing.tests import persistence as cases

# The library's JSON format itself, which runledger keeps (the library skips these for its own
# JSON transcoder alike): json writes a tuple as a list, a subclass of dict, list, str or int
# as its base type.
_AS_BASE = "the library's JSON format stores {} as {}: runledger keeps that format"


class TestOurTranscoder(cases.TranscoderTestCase):
    """The transcoder ``LedgerApp`` constructs, registrations and all, with the two custom
    transcodings the library's cases use registered on top."""

    def construct_transcoder(self) -> Transcoder:
        app = LedgerApp(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        transcoder = app.mapper.transcoder
        app.close()
        assert type(transcoder) is FastJSONTranscoder
        transcoder.register(cases.CustomType1AsDict())
        transcoder.register(cases.CustomType2AsDict())
        return transcoder

    @skip(_AS_BASE.format("a tuple", "a list"))
    def test_tuple(self) -> None: ...

    @skip(_AS_BASE.format("a tuple", "a list"))
    def test_mixed(self) -> None: ...

    @skip(_AS_BASE.format("a dict subclass", "a dict"))
    def test_dict_subclass(self) -> None: ...

    @skip(_AS_BASE.format("a list subclass", "a list"))
    def test_list_subclass(self) -> None: ...

    @skip(_AS_BASE.format("a str subclass", "a str"))
    def test_str_subclass(self) -> None: ...

    @skip(_AS_BASE.format("an int subclass", "an int"))
    def test_int_subclass(self) -> None: ...


class OurStore:
    """A private schema per case, made by ``runledger init`` and opened by ``open_app``;
    dropped, with everything in it, after the case."""

    with_function = True  # False: a store an earlier ``runledger init`` made

    def setUp(self) -> None:
        self.url = new_pg_url(PG_ADMIN)
        try:
            init_store(Settings(database_url=self.url))
            if not self.with_function:
                schema = self.url.rsplit("schema=", 1)[1]
                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(SQL("DROP FUNCTION {}").format(Identifier(schema, FUNCTION)))
            self.app, _ = open_app(store_config(self.url))
        except BaseException:
            drop_pg_url(PG_ADMIN, self.url)
            raise

    def tearDown(self) -> None:
        try:
            self.app.close()
        finally:
            drop_pg_url(PG_ADMIN, self.url)

    def create_recorder(self) -> PostgresApplicationRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        # Configured as the store configures it, or the cases would prove nothing of ours.
        assert ("insert_events" in vars(recorder)) is self.with_function  # pg_insert's insert
        assert "unnest(%b::" in recorder.insert_events_statement.as_string(None)  # binary
        return recorder


@pytest.mark.postgres
@pytest.mark.usefixtures("pg_admin")
class TestOurRecorder(OurStore, cases.ApplicationRecorderTestCase[PostgresApplicationRecorder]):
    """Every save through ``rl_insert_events``, which NOTIFYs as the library's insert does: its
    subscription test runs as well."""


@pytest.mark.postgres
@pytest.mark.usefixtures("pg_admin")
class TestOurRecorderWithoutFunction(
    OurStore, cases.ApplicationRecorderTestCase[PostgresApplicationRecorder]
):
    """The library's pipelined saves, with our binary insert statement."""

    with_function = False

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


@pytest.mark.postgres
@pytest.mark.usefixtures("pg_admin")
class TestOurPositionsDoNotInterleave(OurStore, cases.NonInterleavingNotificationIDsBaseCase):
    pass


@pytest.mark.postgres
@pytest.mark.usefixtures("pg_admin")
class TestOurPositionsDoNotInterleaveWithoutFunction(
    OurStore, cases.NonInterleavingNotificationIDsBaseCase
):
    with_function = False
