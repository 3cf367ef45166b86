"""Values an unkind module, author or operator may send, and the World as a module that sends
them (``hostile_world``, its answers scripted per run).

``UNSTORABLE`` values must never reach an event (refused, or read as a malformed answer);
``ODD`` values are ordinary text that must be stored as they are and shown literally.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

from hypothesis import strategies as st

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.projections.rebuild import rebuild
from tests.support.playing import phase, spec, step
from tests.support.world import Verb, World

MODULE = "hostile"
ACTION = "hostile.thing"
LEASE = "hostile.weather"


class Unprintable(Exception):
    """An exception whose message cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("no message for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class Unshowable:
    def __str__(self) -> str:
        raise RuntimeError("cannot show")

    __repr__ = __str__


class Treacherous(dict[str, Any]):
    """A dict that raises whenever core looks at it the usual way."""

    def get(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("get refused")

    def __getitem__(self, _: Any) -> Any:
        raise RuntimeError("getitem refused")

    def keys(self) -> Any:
        raise RuntimeError("keys refused")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("iter refused")


def nested(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    node = top
    for _ in range(levels):
        node["k"] = {}
        node = node["k"]
    return top


def unstorable() -> dict[str, Any]:
    """Fresh each time: a generator can be read once."""
    return {
        "NaN": float("nan"),
        "Infinity": float("inf"),
        "-Infinity": float("-inf"),
        "NUL": "nul\x00byte",
        "lone surrogate": "bad\ud800",
        "1 MB string": "x" * 1_000_000,
        "10,000 deep": nested(10_000),
        "bytes": b"\x00\xff",
        "generator": (i for i in range(3)),
        "unshowable object": Unshowable(),
        "huge integer": 10**30,
    }


ODD: dict[str, str] = {
    "markup closing nothing": "[/] oops",
    "markup colour": "[bold red]ALERT[/bold red]",
    "html": "<script>alert(1)</script>",
    "terminal escape": "\x1b[31mred\x1b[0m",
}


def odd_values() -> st.SearchStrategy[Any]:
    """Hypothesis: anything JSON-ish, with the non-finite numbers, NULs and surrogates mixed in."""
    texts = st.text(alphabet=st.characters(codec=None), max_size=40) | st.sampled_from(
        ["\x00", "\ud800", "[/]", "[bold]x[/bold]", "<b>", "\x1b[2J"]
    )
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=True)
        | texts
        | st.binary(max_size=8)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
        max_leaves=12,
    )


def hostile_world(registry: Registry) -> World:
    """The World as module ``hostile``: things of kind ``thing`` made by one action, and one
    lease. A test scripts its answers per run, since a walk's runs share the action."""
    world = World(name=MODULE, lease=LEASE, kind="thing")
    world.install(registry, ACTION, budget_ms=2_000)
    return world


def asked_of(verb: Verb) -> str:
    """What a verb of the hostile world is asked of: its lease, or its action."""
    return LEASE if verb in ("apply", "restore") else ACTION


def thing_spec(name: str = "hostile walk", **params: Any) -> dict[str, Any]:
    return spec(phase("p", step("s", ACTION, **params), advance="manual"), name=name)


def lease_spec(target: str, name: str = "hostile lease") -> dict[str, Any]:
    storm = step("l", "core.lease", lease=LEASE, target=target, value="storm", duration_s=600)
    return spec(phase("p", storm, advance="manual"), name=name)


def every_run(rl: Runledger) -> list[UUID]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT run_id FROM {rl_runs} ORDER BY started_at"))
        return [UUID(row["run_id"]) for row in cursor.fetchall()]


def still_works(rl: Runledger) -> None:
    """Every reader and the tick still work for every run, and a rebuild equals the live tables."""
    rl.projector.catch_up()
    runs = every_run(rl)
    assert len(rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts)) == len(runs)
    for run in runs:
        rl.queries.log(run)
        rl.queries.unresolved_entries(run)
        rl.runs.describe(run)
        rl.history.replay(run, None, None)
    rl.runner("still-works").tick()
    report = rebuild(rl.app, rl.backend, None, verify=True)
    assert report.differences == []
