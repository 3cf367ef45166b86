"""The encoder is the last word on what is stored, and what earlier versions stored still reads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import JSONTranscoder, Transcoder
from freezegun import freeze_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runledger.application.errors import BadRequest
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.application.store.transcoding import FastJSONTranscoder
from runledger.application.store.url import store_config
from runledger.domain.errors import DomainError
from runledger.domain.run import Run
from runledger.domain.values import UnsafeValue, check_value, value_problem
from tests.support.hostile import hostile_world, odd_values, still_works, thing_spec
from tests.support.playing import ended, makes
from tests.support.reading import row, written
from tests.support.world import World


def transcoder() -> FastJSONTranscoder:
    found = LedgerApp(env=_memory()).mapper.transcoder
    assert isinstance(found, FastJSONTranscoder)
    return found


def _memory() -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "eventsourcing.popo"}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "a\x00b", "\udfff", "x" * 9_000_000])
def test_the_encoder_refuses_what_a_reader_could_not_take(value: Any) -> None:
    with pytest.raises(UnsafeValue):
        transcoder().encode({"v": value})


def test_the_encoder_keeps_a_backslash_before_u0000_which_is_only_text() -> None:
    t = transcoder()
    for text in ("\\u0000", "\\\\u0000", "[/] <b> \x1b"):
        assert t.decode(t.encode({"v": text})) == {"v": text}


class LegacyApp(LedgerApp):
    """How the previous version wrote: the library's encoder, which allows NaN and NUL."""

    name = "Ledger"

    def construct_transcoder(self) -> Transcoder:
        legacy = JSONTranscoder()
        self.register_transcodings(legacy)
        return legacy


def test_runs_stored_with_nan_and_nul_by_an_earlier_version_read_and_rebuild(
    rl: Runledger, store_url: str, registry: Any
) -> None:
    hostile_world(registry)
    config = store_config(Settings(database_url=store_url).database_url)
    legacy = LegacyApp(env={**config.env, "CREATE_TABLE": "n"})
    spec = thing_spec(name="nul\x00name", note=float("nan"))
    legacy.save(Run.start(uuid4(), "nul\x00name", rl.clock(), spec))
    legacy.close()
    later = rl.runs.start(thing_spec(name="after"))
    assert row(rl, later).name == "after"
    still_works(rl)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(value=odd_values())
def test_any_value_is_either_refused_with_nothing_written_or_stored_as_given(
    rl: Runledger, registry: Any, value: Any
) -> None:
    if not registry.actions:
        hostile_world(registry)
    before = written(rl)
    try:
        run = rl.runs.start(thing_spec(note=value))
    except (BadRequest, DomainError) as refusal:
        assert value_problem({"note": value}, "params") is not None or "params" in str(refusal)
        assert written(rl) == before
        return
    assert check_value(value, "note") is value
    assert rl.runs.describe(run)
    rl.projector.catch_up()


@given(text=st.text(alphabet=st.characters(codec=None), max_size=60))
def test_any_text_either_has_a_named_problem_or_round_trips_through_the_encoder(
    text: str,
) -> None:
    t = transcoder()
    if value_problem(text) is not None:
        with pytest.raises(UnsafeValue):
            t.encode({"v": text})
        return
    assert t.decode(t.encode({"v": text})) == {"v": text}


def test_a_run_saved_under_freeze_time_reads_back_as_the_moment_it_was_frozen_at(
    make_runledger: Callable[..., Runledger], world: World
) -> None:
    """freezegun's clock answers a datetime subclass; it is stored as a datetime, unpatched."""
    frozen_at = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    with freeze_time(frozen_at):
        rl = make_runledger()
        run_id = ended(rl, makes("spawn", "c1"), name="frozen")
    run = rl.ledger.get_run(run_id)
    assert (run.started_at, run.ended_at) == (frozen_at, frozen_at)
    assert type(run.started_at) is datetime
    assert row(rl, run_id).status == "completed"
