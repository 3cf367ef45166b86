"""The conformance kit against the built-in modules, against the worked example in MODULES.md,
and against modules that each break one promise: the kit must name it."""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from runledger.application.builtin_modules.redis.world import RedisWorld
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules import conformance
from runledger.application.modules.loader import BUILTIN_DIR
from runledger.application.modules.protocol import Registry

MODULES_MD = Path(__file__).parents[2] / "MODULES.md"
EVERY_CHECK = [
    "perform_is_idempotent",
    "revert_by_key_gives_back_what_it_made",
    "revert_ends_the_key",
    "perform_in_flight_makes_nothing",
    "apply_twice_answers_the_first",
    "restore_by_key_puts_back_what_was_found",
    "restore_with_nothing_applied_ends_the_key",
    "drift_is_left_alone",
]


# --- the built-in modules -------------------------------------------------------------------------


def test_the_sandbox_keeps_the_module_contract(tmp_path: Path) -> None:
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")

    @contextmanager
    def slow(seconds: float) -> Iterator[None]:
        world.set_fault("sandbox.spawn", "hang", seconds)
        try:
            yield
        finally:
            world.clear_faults()

    settings = {"RUNLEDGER_SANDBOX_PATH": str(world.path)}
    with conformance.loaded(BUILTIN_DIR / "sandbox", settings) as registry:
        passed = conformance.check(
            conformance.Subject(
                registry,
                action="sandbox.spawn",
                params={"count": 2},
                lease="sandbox.weather",
                target="north",
                set_value=lambda target, value: world.set_value(f"weather:{target}", value),
                probe=lambda key: [r for r, t in world.things().items() if t["key"] == key],
                slow_perform=slow,
            )
        )
    assert passed == EVERY_CHECK
    assert world.things() == {}


REQUIRE_REDIS = os.environ.get("RUNLEDGER_REQUIRE_REDIS") == "1"


@pytest.fixture
def redis_client() -> Iterator[tuple[redis.Redis, str]]:
    """The shared server, under a prefix of the test's own, deleted at the end."""
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0", decode_responses=True)
    try:
        client.ping()
    except redis.RedisError as error:
        if REQUIRE_REDIS:
            pytest.fail(f"Redis is required here (RUNLEDGER_REQUIRE_REDIS=1): {error}")
        pytest.skip(f"no Redis server at 127.0.0.1:6379: {error}")
    prefix = f"rltest:{uuid.uuid4().hex[:12]}:"
    yield client, prefix
    leftovers = list(client.scan_iter(match=f"{prefix}*"))
    if leftovers:
        client.delete(*leftovers)
    client.close()


def test_the_redis_module_keeps_the_module_contract(
    redis_client: tuple[redis.Redis, str],
) -> None:
    client, prefix = redis_client
    world = RedisWorld(client, prefix)

    def made_under(key: str) -> list[str]:
        names = client.scan_iter(match=f"{prefix}*")
        return [n for n in names if not world.is_bookkeeping(n) and client.get(n) == key]

    settings = {"RUNLEDGER_REDIS_URL": "redis://127.0.0.1:6379/0", "RUNLEDGER_REDIS_PREFIX": prefix}
    with conformance.loaded(BUILTIN_DIR / "redis", settings) as registry:
        passed = conformance.check(
            conformance.Subject(
                registry,
                action="redis.spawn",
                params={"count": 2},
                lease="redis.string",
                target=f"{prefix}door",
                set_value=client.set,
                probe=made_under,
                races=30,
            )
        )
    assert passed == EVERY_CHECK
    assert {n for n in client.scan_iter(match=f"{prefix}*") if not world.is_bookkeeping(n)} == {
        f"{prefix}door"  # the kit's last restore left somebody else's value, as it must
    }


# --- the worked example in MODULES.md -------------------------------------------------------------


def worked_example(into: Path) -> Path:
    """The lanterns module exactly as MODULES.md shows it, written into a module folder."""
    text = MODULES_MD.read_text(encoding="utf-8")
    example = text[text.index("## A worked example: lanterns") :]
    toml = re.search(r"```toml\n(.*?)```", example, re.S)
    code = re.search(r"```python\n(.*?)```", example, re.S)
    assert toml and code, "MODULES.md has no worked example's module.toml and code"
    folder = into / "lanterns"
    folder.mkdir()
    (folder / "module.toml").write_text(toml.group(1), encoding="utf-8")
    entry = re.search(r'entry = "(.+?):register"', toml.group(1))
    assert entry
    (folder / entry.group(1)).write_text(code.group(1), encoding="utf-8")
    return folder


def painter(path: Path) -> Any:
    """Somebody else painting a lantern gate: the same file, under the same lock."""

    def paint(target: str, value: object) -> None:
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(path.read_text()) if path.exists() else {}
            state.setdefault("colours", {})[target] = value
            path.write_text(json.dumps(state))

    return paint


def test_the_worked_example_in_modules_md_keeps_the_module_contract(tmp_path: Path) -> None:
    folder = worked_example(tmp_path)
    code = (folder / "lanterns.py").read_text(encoding="utf-8")
    assert len(code.splitlines()) <= 85
    world = tmp_path / "world.json"
    settings = {"RUNLEDGER_LANTERNS_PATH": str(world)}
    with conformance.loaded(folder, settings) as registry:
        subject = conformance.Subject(
            registry,
            action="lanterns.light",
            params={"count": 2},
            lease="lanterns.colour",
            target="gate",
            set_value=painter(world),
        )
        assert conformance.check(subject) == EVERY_CHECK
    assert json.loads(world.read_text())["lit"] == {}


def test_the_kits_test_in_modules_md_passes_against_the_worked_example(tmp_path: Path) -> None:
    folder = worked_example(tmp_path)
    text = MODULES_MD.read_text(encoding="utf-8")
    section = text[text.index("## Checking a module") : text.index("## A worked example")]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "MODULES.md shows no test for the kit"
    code = found.group(1).replace('Path("modules/lanterns")', f"Path({str(folder)!r})")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(MODULES_MD), "exec"), namespace)
    namespace["test_lanterns_keep_the_module_contract"](tmp_path)
    assert json.loads((tmp_path / "world.json").read_text())["colours"]["gate"] == (
        "kit-somebody-else"
    )


# --- modules that break a promise -----------------------------------------------------------------


class Lanterns:
    """An in-memory lantern world whose promises a test can break one at a time."""

    def __init__(self, *, fences: bool = True, atomic: bool = True, keyed: bool = True) -> None:
        self.fences, self.atomic, self.keyed = fences, atomic, keyed
        self.lock = threading.Lock()
        self.lit: dict[str, str] = {}
        self.ended: set[str] = set()
        self.colours: dict[str, Any] = {}
        self.applied: dict[str, tuple[Any, Any]] = {}
        self.wait_s = 0.0

    def light(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        wait, ref = self.wait_s, f"lantern:{idempotency_key}"
        if not self.atomic and idempotency_key in self.ended:
            return {"ok": False, "retry": False, "error": "given back"}
        time.sleep(wait)
        with self.lock:
            if self.atomic and idempotency_key in self.ended:
                return {"ok": False, "retry": False, "error": "given back"}
            self.lit[ref] = idempotency_key
        return {"ok": True, "resources": [{"kind": "lantern", "ref": ref}]}

    def put_out(self, resources: list[Any], idempotency_key: str, run_id: str) -> Any:
        with self.lock:
            if self.fences:
                self.ended.add(idempotency_key)
            for ref in [r["ref"] for r in resources] or list(self.lit):
                if self.lit.get(ref) == idempotency_key:
                    del self.lit[ref]
        return {"ok": True}

    def still_lit(self, resources: list[Any], run_id: str) -> Any:
        return {"ok": True, "in_force": [r["ref"] for r in resources if r["ref"] in self.lit]}

    def paint(self, target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        with self.lock:
            if self.keyed and idempotency_key in self.ended:
                return {"ok": False, "retry": False, "error": "given back"}
            if not self.keyed or idempotency_key not in self.applied:
                self.applied[idempotency_key] = (self.colours.get(target), value)
                self.colours[target] = value
            baseline, applied = self.applied[idempotency_key]
        return {"ok": True, "baseline": baseline, "applied": applied}

    def unpaint(
        self, baseline: Any, expected: Any, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        with self.lock:
            if self.keyed:
                self.ended.add(idempotency_key)
                if idempotency_key in self.applied:
                    baseline, expected = self.applied[idempotency_key]
                elif expected is None:
                    return {"ok": True}
            current = self.colours.get(target)
            if current == expected:
                self.colours[target] = baseline
            elif current != baseline:
                return {"drifted": True, "current": current}
        return {"ok": True}

    def register(self, ctx: Any) -> None:
        ctx.action(
            "lanterns.light", perform=self.light, revert=self.put_out, reconcile=self.still_lit
        )
        ctx.lease("lanterns.colour", apply=self.paint, restore=self.unpaint)

    @contextmanager
    def slow(self, seconds: float) -> Iterator[None]:
        self.wait_s = seconds
        try:
            yield
        finally:
            self.wait_s = 0.0

    def subject(self, registry: Registry, **more: Any) -> conformance.Subject:
        return conformance.Subject(
            registry,
            action="lanterns.light",
            lease="lanterns.colour",
            target="gate",
            set_value=self.colours.__setitem__,
            probe=lambda key: [ref for ref, k in self.lit.items() if k == key],
            **more,
        )


def problems(world: Lanterns, **more: Any) -> list[str]:
    with (
        conformance.loaded(world.register, name="lanterns") as registry,
        pytest.raises(conformance.NotConforming) as raised,
    ):
        conformance.check(world.subject(registry, **more))
    return raised.value.problems


def test_the_in_memory_lanterns_keep_the_contract_when_nothing_is_broken() -> None:
    world = Lanterns()
    with conformance.loaded(world.register, name="lanterns") as registry:
        assert conformance.check(world.subject(registry, slow_perform=world.slow)) == EVERY_CHECK


def test_a_revert_that_does_not_end_its_key_is_named() -> None:
    found = problems(Lanterns(fences=False))
    assert any(
        re.fullmatch(
            r"revert ends the key: a perform under a key given back after it made something "
            r"made \['lantern:kit-\w+'\]",
            p,
        )
        for p in found
    ), found
    assert not any(p.startswith("perform is idempotent") for p in found)


def test_a_perform_that_checks_its_fence_apart_from_making_is_caught_while_it_waits() -> None:
    world = Lanterns(atomic=False)
    found = problems(world, slow_perform=world.slow, races=0)
    assert len(found) == 1, found
    assert re.fullmatch(
        r"perform in flight makes nothing: a perform whose key was given back while it waited "
        r"left \['lantern:kit-\w+'\] in the world: checking the fence and making must be one "
        r"atomic step",
        found[0],
    ), found


def test_an_apply_that_is_not_keyed_is_named_with_the_baseline_it_answered() -> None:
    found = problems(Lanterns(keyed=False))
    assert (
        "apply twice answers the first: apply repeated with one key answered 'kit-one' -> "
        "'kit-two', not the first apply's 'kit-before' -> 'kit-one'"
    ) in found
    assert any(p.startswith("restore with nothing applied ends the key: ") for p in found)


def test_an_answer_that_is_not_plain_data_is_named() -> None:
    world = Lanterns()
    world.still_lit = lambda resources, run_id: {"ok": True, "in_force": {"a set"}}  # type: ignore[method-assign]
    found = problems(world)
    assert (
        "perform is idempotent: lanterns.light.reconcile answered something that is not plain "
        "data: the answer.in_force is a set, which is not plain data"
    ) in found


def test_a_module_that_does_not_load_is_named(tmp_path: Path) -> None:
    folder = worked_example(tmp_path)
    toml = folder / "module.toml"
    toml.write_text(toml.read_text().replace('api = "2.0"', 'api = "1.0"'))
    with pytest.raises(conformance.NotConforming) as raised, conformance.loaded(folder):
        pass
    (problem,) = raised.value.problems
    assert problem.startswith(
        "the module did not load: module API 1.0 is not compatible with this core's MODULE_API 2.0"
    )
