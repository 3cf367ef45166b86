"""No value from a module, an author or an operator can stop the store: every entry point, both
stores, the whole corpus; then every reader, the tick and a verifying rebuild still work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings

from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.domain.errors import DomainError
from runledger.domain.values import text_problem, value_problem
from tests.support.hostile import (
    ACTION,
    LEASE,
    ODD,
    Treacherous,
    Unprintable,
    Unshowable,
    asked_of,
    hostile_world,
    lease_spec,
    odd_values,
    still_works,
    thing_spec,
    unstorable,
)
from tests.support.reading import row, the_step, written
from tests.support.world import Answer, Verb, World, answering

Make = Callable[[Any], Any]


@pytest.fixture
def module(registry: Registry) -> World:
    return hostile_world(registry)


@pytest.fixture
def walk(rl: Runledger, module: World) -> Iterator[Runledger]:
    """The test's runledger, checked at the end: every reader still works for every run."""
    yield rl
    still_works(rl)


def readable(text: str | None) -> str:
    assert isinstance(text, str) and text.strip()
    assert text_problem(text) is None, text
    return text


def refused(action: Callable[[], Any]) -> str:
    try:
        action()
    except (BadRequest, DomainError) as error:
        return str(error)
    raise AssertionError("accepted")


# --- authors and operators: refused, naming the field, nothing written ---------------------

SPEC_FIELDS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "name": lambda v: thing_spec(name=v),
    "params.note": lambda v: thing_spec(note=v),
    "params.nested.list": lambda v: thing_spec(nested={"list": [1, v]}),
    "phases.0.after_s": lambda v: {
        **thing_spec(),
        "phases": [{**thing_spec()["phases"][0], "after_s": v}],
    },
}


@pytest.mark.parametrize("field", SPEC_FIELDS)
def test_an_author_s_unstorable_value_is_refused_naming_the_field_and_nothing_is_written(
    walk: Runledger, field: str
) -> None:
    before = written(walk)
    for what, value in unstorable().items():
        message = refused(partial(walk.runs.start, SPEC_FIELDS[field](value)))
        head = field.split(".")[0]
        assert head in message, (what, message)
    assert written(walk) == before


def test_a_spec_with_nan_as_json_text_is_refused_before_anything_is_written(
    walk: Runledger,
) -> None:
    before = written(walk)
    document = (
        '{"name": "n", "phases": [{"id": "p", "steps": [{"id": "s", '
        '"action": "hostile.thing", "params": {"note": NaN}}]}]}'
    )
    message = refused(lambda: walk.runs.start(document))
    assert message == "phases.0.steps.0.params.note: nan is not a number a ledger can store"
    assert written(walk) == before


def test_odd_but_ordinary_text_is_stored_exactly_as_written(walk: Runledger) -> None:
    for text in ODD.values():
        run = walk.runs.start(thing_spec(name=text, note=text))
        assert row(walk, run).name == text
        assert walk.runs.describe(run)


OPERATOR_VERBS: dict[str, Callable[[Runledger, UUID, Any], Any]] = {
    "cancel --by": lambda rl, run, v: rl.ledger.cancel_run(run, v, cleanup=False),
    "abort --reason": lambda rl, run, v: rl.ledger.abort_run(run, v),
    "advance --by": lambda rl, run, v: rl.runs.advance(run, v),
    "cleanup --by": lambda rl, run, v: rl.cleanup.manual_cleanup(run, v),
    "tick --worker": lambda rl, run, v: rl.runner(v),
}


@pytest.mark.parametrize("verb", OPERATOR_VERBS)
def test_an_operator_s_unstorable_name_or_reason_is_refused_and_nothing_is_written(
    walk: Runledger, verb: str
) -> None:
    run = walk.runs.start(thing_spec())
    if verb == "cleanup --by":
        walk.ledger.abort_run(run, "ended so it can be cleaned")
    before = written(walk)
    for what, value in unstorable().items():
        message = refused(partial(OPERATOR_VERBS[verb], walk, run, value))
        assert verb.split("--")[1] in message, (what, message)
    assert written(walk) == before


# --- modules: a malformed answer is a retry with a readable error, never a success ----------


def _named(**fields: Any) -> dict[str, Any]:
    return {"ok": True, "resources": [{"kind": "t", "ref": "r", **fields}]}


PERFORM_SHAPES: dict[str, Make] = {
    "the whole answer": lambda v: v,
    "kind": lambda v: {"ok": True, "resources": [{"kind": v, "ref": "r"}]},
    "ref": lambda v: {"ok": True, "resources": [{"kind": "thing", "ref": v}]},
    "payload": lambda v: _named(payload={"n": v}),
    "member_key": lambda v: _named(member_key=v),
    "until": lambda v: _named(until=v),
    "resources": lambda v: {"ok": True, "resources": v},
}


@pytest.mark.parametrize("shape", PERFORM_SHAPES)
def test_a_perform_answer_carrying_an_unstorable_value_is_a_readable_retry(
    walk: Runledger, module: World, shape: str
) -> None:
    for what, value in unstorable().items():
        run = walk.runs.start(thing_spec(name=f"perform {shape} {what}"))
        answer = PERFORM_SHAPES[shape](value)
        module.answer("perform", ACTION, answering(answer), run=run)
        walk.runner("w").tick()
        step = the_step(walk, run, "s")
        assert step.state != "done", (what, step.state)
        readable(step.last_error)
        assert row(walk, run).entries <= 1, what  # its placeholder, nothing named


ERRORS_SHOWN: dict[str, Make] = {
    "a refusal's error": lambda v: {"ok": False, "retry": False, "error": v},
    "a failure's error": lambda v: {"ok": False, "error": v},
}


@pytest.mark.parametrize("verb", ["revert", "restore"])
def test_an_error_message_is_made_safe_and_stays_visible(
    walk: Runledger, module: World, verb: Verb
) -> None:
    texts = {"NUL": "nul\x00byte", "surrogate": "bad\ud800", "megabyte": "x" * 1_000_000, **ODD}
    for n, (what, text) in enumerate(texts.items()):
        run = walk.runs.start(lease_spec(f"t{n}") if verb == "restore" else thing_spec())
        walk.runner("w").tick()
        module.answer(verb, asked_of(verb), answering({"ok": False, "error": text}), run=run)
        walk.ledger.abort_run(run, "give it back")
        walk.runner("w").tick()
        left = walk.queries.unresolved_entries(run)
        assert [e.status for e in left] == ["failing"], what
        shown = readable(left[0].last_error)
        assert len(shown) <= 2_000
        assert shown.startswith(text[:20].replace("\x00", "\\x00").replace("\ud800", "\\ud800"))


REVERT_SHAPES: dict[str, Make] = {
    "the whole answer": lambda v: v,
    "a drift's current": lambda v: {"drifted": True, "current": v, "ok": True},
    "ok with failed refs": lambda v: {"ok": True, "failed": [v]},
    "an error": lambda v: {"ok": False, "retry": False, "error": v},
}


@pytest.mark.parametrize("verb", ["revert", "restore"])
@pytest.mark.parametrize("shape", REVERT_SHAPES)
def test_a_revert_or_restore_answer_carrying_an_unstorable_value_never_reads_as_given_back(
    walk: Runledger, module: World, verb: Verb, shape: str
) -> None:
    for n, (what, value) in enumerate(unstorable().items()):
        run = walk.runs.start(lease_spec(f"t{n}") if verb == "restore" else thing_spec())
        walk.runner("w").tick()
        answer = REVERT_SHAPES[shape](value)
        module.answer(verb, asked_of(verb), answering(answer), run=run)
        walk.ledger.abort_run(run, "give it back")
        walk.runner("w").tick()
        left = walk.queries.unresolved_entries(run)
        if shape == "ok with failed refs" and isinstance(value, str):
            # Text naming a ref no entry has: "done" for the rest is the truth.
            assert left == [], what
            continue
        assert [e.status for e in left] == ["failing"], (what, left)
        readable(left[0].last_error)


def test_an_apply_answer_carrying_an_unstorable_value_acquires_nothing(
    walk: Runledger, module: World
) -> None:
    for n, (what, value) in enumerate(unstorable().items()):
        run = walk.runs.start(lease_spec(f"a{n}"))
        module.answer(
            "apply", LEASE, answering({"ok": True, "baseline": value, "applied": "x"}), run=run
        )
        walk.runner("w").tick()
        step = the_step(walk, run, "l")
        assert step.state != "done", what
        readable(step.last_error)


def test_a_reconcile_answer_carrying_an_unstorable_value_leaves_the_ledger_alone(
    walk: Runledger, module: World
) -> None:
    run = walk.runs.start(thing_spec())
    walk.runner("w").tick()
    for what, value in unstorable().items():
        module.answer("reconcile", ACTION, answering({"ok": True, "in_force": [value]}), run=run)
        # The one live entry is not among the refs answered: with a readable answer it would be
        # orphaned; with an unreadable one core does not know, and leaves it alone.
        summary = walk.reconciler.reconcile_module("hostile")
        assert (summary.orphaned, summary.unanswered) == (0, 1), what
        module.answer("reconcile", ACTION, answering(value), run=run)
        summary = walk.reconciler.reconcile_module("hostile")
        assert (summary.orphaned, summary.unanswered) == (0, 1), what
    assert [e.status for e in walk.queries.unresolved_entries(run)] == ["live"]


def test_an_expiry_naming_an_unstorable_kind_or_ref_changes_nothing(
    walk: Runledger, module: World
) -> None:
    walk.runs.start(thing_spec())
    walk.runner("w").tick()
    before = written(walk)
    for value in unstorable().values():
        assert walk.reconciler.expire("hostile", "thing", value) == {"expired": 0}
        assert walk.reconciler.expire("hostile", value, "r") == {"expired": 0}
    assert written(walk) == before


# --- answers that make judging itself raise -------------------------------------------------


async def _raises_unprintable(*_: Any) -> Any:
    raise Unprintable()


JUDGE_BREAKERS: dict[str, Answer] = {
    "an exception whose __str__ raises": lambda *_: (_ for _ in ()).throw(Unprintable()),
    "a coroutine raising such an exception": _raises_unprintable,
    "a dict whose .get raises, saying nothing": lambda *_: Treacherous(),
}


@pytest.mark.parametrize("breaker", JUDGE_BREAKERS)
def test_whatever_a_revert_raises_or_returns_a_verdict_and_an_error_are_recorded(
    walk: Runledger, module: World, breaker: str
) -> None:
    run = walk.runs.start(thing_spec())
    walk.runner("w").tick()
    module.answer("revert", ACTION, JUDGE_BREAKERS[breaker], run=run)
    walk.ledger.abort_run(run, "give it back")
    walk.runner("w").tick()
    [left] = walk.queries.unresolved_entries(run)
    assert (left.status, left.attempts) == ("failing", 1)
    error = readable(left.last_error)
    if "dict" not in breaker:
        assert "Unprintable (its message could not be read)" in error


def test_a_dict_whose_get_raises_is_judged_by_what_it_holds(walk: Runledger, module: World) -> None:
    run = walk.runs.start(thing_spec())
    walk.runner("w").tick()
    module.answer("revert", ACTION, lambda *_: Treacherous(ok=True), run=run)
    walk.ledger.abort_run(run, "give it back")
    walk.runner("w").tick()
    assert walk.queries.unresolved_entries(run) == []
    assert sum(module.reverts.values()) == 1


@pytest.mark.parametrize("breaker", JUDGE_BREAKERS)
def test_whatever_a_perform_raises_or_returns_the_step_records_a_readable_failure(
    walk: Runledger, module: World, breaker: str
) -> None:
    run = walk.runs.start(thing_spec())
    module.answer("perform", ACTION, JUDGE_BREAKERS[breaker], run=run)
    walk.runner("w").tick()
    step = the_step(walk, run, "s")
    assert (step.state, step.attempts) != ("done", 1)
    readable(step.last_error)


def test_a_module_s_reconcile_request_never_raises_into_the_module(
    walk: Runledger, module: World
) -> None:
    from runledger.application.modules.loader import ModuleEvents

    def broken(owner: str) -> Any:
        raise Unprintable()

    events = ModuleEvents("hostile", broken, walk.reconciler.expire)
    assert events.reconcile() is None
    assert events.expired(kind=Unshowable(), ref="r") == {"expired": 0}


# --- any value at all (Hypothesis) ---------------------------------------------------------

SOME = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@SOME
@given(value=odd_values())
def test_a_perform_answer_naming_any_payload_is_stored_as_given_or_a_readable_retry(
    rl: Runledger, module: World, value: Any
) -> None:
    run = rl.runs.start(thing_spec())
    module.answer("perform", ACTION, lambda *_: _named(payload={"n": value}), run=run)
    rl.runner("w").tick()
    step = the_step(rl, run, "s")
    if value_problem(value) is None:
        assert step.state == "done"
        [named] = [e for e in rl.queries.entries(run) if e.kind == "t"]
        assert named.payload == {"n": value}
    else:
        assert step.state != "done"
        readable(step.last_error)


@SOME
@given(value=odd_values())
def test_no_odd_revert_answer_reads_as_given_back_unless_it_says_ok(
    rl: Runledger, module: World, value: Any
) -> None:
    run = rl.runs.start(thing_spec())
    rl.runner("w").tick()
    module.answer("revert", ACTION, answering(value), run=run)
    rl.ledger.abort_run(run, "give it back")
    rl.runner("w").tick()
    left = rl.queries.unresolved_entries(run)
    if not left:
        assert isinstance(value, dict) and value.get("ok") is True
        assert value.get("drifted") is not True
    else:
        readable(left[0].last_error)
