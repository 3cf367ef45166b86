"""Bounds on work: a spec has a maximum size, and a tick dispatches at most so many steps per run
and in all, the rest in later ticks, on an SQLite file and on PostgreSQL; then the same through
the real CLI.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.errors import BadRequest, ConfigError
from runledger.application.runledger import Runledger
from runledger.application.services.spec_input import MAX_SPEC_BYTES
from runledger.application.settings import Settings
from runledger.domain.spec import MAX_PHASES, MAX_STEPS
from tests.conftest import Cli
from tests.support.forked_cli import ForkedCli
from tests.support.playing import phase, spec, step
from tests.support.reading import row, the_step, tick, written
from tests.support.world import World

SPAWN = "game.spawn"
Opener = Callable[..., Runledger]


def many(steps: int, name: str = "festival", phases: int = 1) -> dict[str, Any]:
    per = steps // phases
    return spec(
        *(phase(f"p{p}", *(step(f"s{p}-{i}", SPAWN) for i in range(per))) for p in range(phases)),
        name=name,
    )


def dispatched(game: World) -> Counter[str]:
    """Performs so far, per run: the idempotency key is ``<run>:<step>``."""
    return Counter(key.partition(":")[0] for _, key in game.performs)


# --- the size of a spec ------------------------------------------------------------------------


def refusal(rl: Runledger, document: str | dict[str, Any]) -> str:
    before = written(rl)
    with pytest.raises(BadRequest) as refused:
        rl.runs.start(document)
    assert written(rl) == before
    assert rl.queries.running_runs(10) == []
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_spec_over_the_byte_cap_is_refused_in_one_sentence_and_nothing_is_written(
    opened: Opener,
) -> None:
    rl = opened()
    padding = "x" * MAX_SPEC_BYTES
    document = spec(phase("p", step("s", SPAWN, note=padding)))
    for given in (json.dumps(document), document):
        message = refusal(rl, given)
        assert message.startswith("the spec is ") and "at most 1,048,576 bytes (1 MiB)" in message


def test_the_byte_cap_counts_bytes_not_characters(opened: Opener) -> None:
    rl = opened()
    # Each é is two bytes in UTF-8: under the cap in characters, over it in bytes.
    document = json.dumps(
        spec(phase("p", step("s", SPAWN, note="é" * (MAX_SPEC_BYTES // 2)))), ensure_ascii=False
    )
    assert len(document) < MAX_SPEC_BYTES
    assert "at most 1,048,576 bytes" in refusal(rl, document)


def test_a_phase_with_more_steps_than_the_cap_is_refused_naming_its_steps(opened: Opener) -> None:
    rl = opened()
    message = refusal(rl, json.dumps(many(10_000)))
    assert message == (
        "phases.0.steps: List should have at most 1000 items after validation, not 10000"
    )


def test_more_steps_than_the_cap_across_phases_is_refused_naming_the_limit(
    opened: Opener,
) -> None:
    rl = opened()
    message = refusal(rl, many(MAX_STEPS + 2, phases=2))
    assert message == "phases: a spec may have at most 1,000 steps in all; this one has 1,002"


def test_more_phases_than_the_cap_is_refused_naming_the_phases(opened: Opener) -> None:
    rl = opened()
    message = refusal(rl, many(MAX_PHASES + 1, phases=MAX_PHASES + 1))
    assert message == "phases: List should have at most 100 items after validation, not 101"


def test_a_spec_at_the_caps_is_accepted(opened: Opener) -> None:
    rl = opened()
    run = rl.runs.start(many(MAX_STEPS, phases=MAX_PHASES))
    assert row(rl, run).status == "running"
    assert len(rl.runs.describe(run)) == MAX_PHASES


# --- the bounds of a tick ----------------------------------------------------------------------


def test_a_tick_dispatches_at_most_the_bound_per_run_and_the_rest_in_later_ticks(
    opened: Opener, game: World
) -> None:
    rl = opened(steps_per_run_tick=4, steps_per_tick=100)
    big, small = rl.runs.start(many(10, name="big")), rl.runs.start(many(3, name="small"))
    assert tick(rl).advance.dispatched == 7
    assert dispatched(game) == {str(big): 4, str(small): 3}
    assert row(rl, small).status == "completed"
    assert tick(rl).advance.dispatched == 4
    assert tick(rl).advance.dispatched == 2
    assert dispatched(game) == {str(big): 10, str(small): 3}
    assert row(rl, big).status == "completed"
    assert row(rl, big).cleanup_status == "complete"


def test_a_tick_dispatches_at_most_the_bound_overall(opened: Opener, game: World) -> None:
    rl = opened(steps_per_run_tick=100, steps_per_tick=7)
    runs = [rl.runs.start(many(5, name=f"r{n}")) for n in range(3)]
    reports = [tick(rl).advance.dispatched for _ in range(3)]
    assert reports == [7, 7, 1]
    assert dispatched(game) == {str(run): 5 for run in runs}
    assert {row(rl, run).status for run in runs} == {"completed"}


def test_runs_the_tick_did_not_reach_go_first_in_the_next_tick(opened: Opener, game: World) -> None:
    # One run's worth per tick: were the order left to chance, five ticks would serve five
    # different runs about one time in twenty-six.
    rl = opened(steps_per_run_tick=3, steps_per_tick=3)
    runs = [rl.runs.start(many(6, name=f"r{n}")) for n in range(5)]
    served: list[set[str]] = []
    for _ in range(5):
        before = dispatched(game)
        tick(rl)
        served.append(set(dispatched(game) - before))
    assert [len(s) for s in served] == [1, 1, 1, 1, 1]
    assert set().union(*served) == {str(run) for run in runs}
    assert dispatched(game) == {str(run): 3 for run in runs}


def test_a_run_cut_short_by_the_tick_bound_is_finished_before_it_is_started_again(
    opened: Opener, game: World
) -> None:
    rl = opened(steps_per_run_tick=4, steps_per_tick=6)
    runs = [rl.runs.start(many(4, name=f"r{n}")) for n in range(3)]
    assert [tick(rl).advance.dispatched for _ in range(2)] == [6, 6]
    assert dispatched(game) == {str(run): 4 for run in runs}
    assert {row(rl, run).status for run in runs} == {"completed"}


def test_a_step_the_tick_did_not_reach_has_nothing_recorded(opened: Opener, game: World) -> None:
    rl = opened(steps_per_run_tick=2, steps_per_tick=2)
    run = rl.runs.start(many(5))
    tick(rl)
    later = the_step(rl, run, "s0-4")
    assert (later.state, later.attempts, later.version) == ("waiting", 0, 1)
    rl.projector.catch_up()
    placeholders = [e.ref for e in rl.queries.entries(run) if e.kind == "@step"]
    assert placeholders == [] or all(ref.endswith(("s0-0", "s0-1")) for ref in placeholders)
    assert rl.runs.describe(run)[0].headline == "Phase p0: running steps"


def test_the_bounds_are_settings_read_from_the_environment() -> None:
    settings = Settings.from_env({"EVENT_STEPS_PER_RUN_TICK": "7", "EVENT_STEPS_PER_TICK": "9"})
    assert (settings.steps_per_run_tick, settings.steps_per_tick) == (7, 9)
    defaults = Settings.from_env({})
    assert defaults.steps_per_run_tick <= defaults.steps_per_tick
    for name in ("EVENT_STEPS_PER_RUN_TICK", "EVENT_STEPS_PER_TICK"):
        with pytest.raises(ConfigError, match=f"^{name} is invalid: "):
            Settings.from_env({name: "0"})


# --- through the CLI ---------------------------------------------------------------------------


def sandbox_spec(steps: int, name: str) -> str:
    return json.dumps(
        {
            "name": name,
            "phases": [
                {
                    "id": "gather",
                    "steps": [
                        {
                            "id": f"s{i}",
                            "action": "sandbox.spawn",
                            "params": {"kind": "crow", "count": 1},
                        }
                        for i in range(steps)
                    ],
                }
            ],
        }
    )


def test_runledger_start_of_a_10000_step_spec_is_refused_in_one_sentence(
    cli: Cli, tmp_path: Path
) -> None:
    assert cli("init", cwd=tmp_path).returncode == 0
    (tmp_path / "huge.json").write_text(sandbox_spec(10_000, "huge"))
    done = cli("start", "huge.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.strip() == (
        "runledger: phases.0.steps: List should have at most 1000 items after validation, not 10000"
    )
    assert "Traceback" not in done.stdout + done.stderr
    assert "No runs yet." in cli("runs", cwd=tmp_path).stdout


def performs_per_run(folder: Path) -> Counter[str]:
    calls = SandboxWorld(folder / "sandbox.sqlite3").calls("perform:sandbox.spawn")
    found: Counter[str] = Counter()
    for key, n in calls.items():
        found[key.partition(":")[0]] += n
    return found


@pytest.fixture
def in_memory(tmp_path: Path) -> Iterator[Path]:
    """A folder on a RAM file system where there is one: 1,150 steps are thousands of SQLite
    commits, and on a disk their fsyncs, not the ticks, took most of the test's time."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(dir=shm, prefix="runledger-test-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_spec_at_the_cap_is_ticked_within_the_bounds_until_all_done(
    tmp_path: Path, in_memory: Path
) -> None:
    env = {"EVENT_STEPS_PER_RUN_TICK": "300", "EVENT_STEPS_PER_TICK": "400"}
    folder = in_memory
    cli = ForkedCli(tmp_path / "cli")  # each command forked from a process that imported the CLI
    try:
        assert cli.run("init", cwd=folder).returncode == 0
        (folder / "big.json").write_text(sandbox_spec(MAX_STEPS, "big"))
        (folder / "small.json").write_text(sandbox_spec(150, "small"))
        started = [
            cli.run("start", f"{name}.json", cwd=folder, env=env) for name in ("big", "small")
        ]
        assert [s.returncode for s in started] == [0, 0], [s.stdout for s in started]
        big, small = (s.stdout.strip() for s in started)
        per_tick: list[Counter[str]] = []
        for _ in range(8):
            before = performs_per_run(folder)
            done = cli.run("tick", cwd=folder, env=env)
            assert done.returncode == 0, done.stdout + done.stderr
            per_tick.append(performs_per_run(folder) - before)
            found = re.search(r"(\d+) steps? dispatched", done.stdout)
            assert found and int(found[1]) == per_tick[-1].total(), done.stdout
            if "running" not in cli.run("runs", cwd=folder).stdout:
                break
        listed = cli.run("runs", cwd=folder).stdout
    finally:
        cli.close()
    assert all(ticked.total() <= 400 for ticked in per_tick), per_tick
    assert all(n <= 300 for ticked in per_tick for n in ticked.values()), per_tick
    assert performs_per_run(folder) == {big: MAX_STEPS, small: 150}
    assert len(per_tick) >= 4  # the big run needs at least four ticks of 300
    assert listed.count("completed") == 2 and "running" not in listed
