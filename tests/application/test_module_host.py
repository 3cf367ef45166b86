"""Loose ends in the module host (issue 9): what a loaded module can reach, which settings it
is given, and that neither its threads nor an endless import outlive what core allows.

Hostile modules are real folders loaded through the real loader; exit behaviour is measured on
real ``runledger`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.deadline import STOP_GRACE_S
from runledger.application.modules.loader import Loader, ModuleEvents
from runledger.application.modules.protocol import ModuleRegistrar, Registry
from runledger.application.runledger import Runledger
from runledger.application.services.ledger import Ledger
from runledger.application.services.reconcile import Reconciler
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from tests.application.test_loader import ZONES, by_name, marking, runledger, unused, write_module

BOUND_S = 30.0
"""How long a runledger process may take, start to exit, on a busy machine. A thread that kept it
alive would keep it past the helper's 60 s timeout; an idle machine takes about 1 s."""

LINGERS = """
import threading
import time

def forever():
    while True:
        time.sleep(0.05)

def register(ctx):
    ctx.action("lingers.spawn", perform=lambda **_: {"ok": True, "resources": []})
    # register() runs in a daemon thread, whose threads are daemons unless told otherwise
    threading.Thread(target=forever, name="lingers-own", daemon=False).start()
    threading.Thread(target=threading.Event().wait, name="lingers-library", daemon=False).start()
    ctx.on_close(lambda: time.sleep(3600))  # a closer that never returns either
"""

SPIN_IMPORT = "while True:\n    pass\n"

SPIN_REGISTER = """
def register(ctx):
    n = 0
    while True:
        n += 1
"""

FORGER = """
attempts = {}
held = {}

def register(ctx):
    held["ctx"] = ctx

def forge():
    ctx = held["ctx"]
    for where, target in (("events", ctx.events), ("ctx", ctx)):
        for attribute in ("_module", "module", "name", "owner", "_owner"):
            try:
                setattr(target, attribute, "alpha")
                attempts[f"{where}.{attribute}"] = "set"
            except AttributeError:
                attempts[f"{where}.{attribute}"] = "refused"
    return ctx.events.expired(kind="zone", ref="z1")

def late():
    held["ctx"].action("forger.late", perform=lambda **_: None)
"""

SPY = """
seen = {}

def register(ctx):
    seen.update(ctx.settings)
"""


def environment(tmp_path: Path, modules_dir: Path, **more: str) -> dict[str, str]:
    return {
        "RUNLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.sqlite3'}",
        "RUNLEDGER_MODULES_DIR": str(modules_dir),
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        **more,
    }


def table(stdout: str) -> dict[str, list[str]]:
    """``runledger modules``'s rows by module: site, status, actions, leases, reason."""
    return {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in stdout.splitlines()
        if line.count("│") == 7
    }


def timed(*args: str, cwd: Path, env: dict[str, str]) -> tuple[float, Any]:
    began = time.monotonic()
    done = runledger(*args, cwd=cwd, env=env)
    return time.monotonic() - began, done


@pytest.fixture
def modules_dir(tmp_path: Path) -> Path:
    where = tmp_path / "modules"
    where.mkdir()
    return where


# --- threads a module leaves behind never keep the process alive ----------------------------------


@pytest.mark.slow
def test_runledger_modules_exits_promptly_and_names_the_module_that_left_threads_running(
    modules_dir: Path, tmp_path: Path
) -> None:
    write_module(modules_dir, "lingers", code=LINGERS)
    env = environment(tmp_path, modules_dir)
    init_store(Settings(database_url=env["RUNLEDGER_DATABASE_URL"]))  # setup, not under test
    seconds, done = timed("modules", cwd=tmp_path, env=env)
    assert seconds < BOUND_S
    assert done.returncode == 0, done.stderr
    assert table(done.stdout)["lingers"][1] == "loaded"
    assert "module lingers left 2 thread(s) running" in done.stderr
    assert "lingers-own" in done.stderr and "lingers-library" in done.stderr


def runner_process(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ.update(env, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from runledger.application.cli.app import main; main()",
            "runner",
            "--interval",
            "0.1",
            "--worker",
            "w1",
        ],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_the_runner_stops_after_sigterm_within_the_bound_naming_the_module_with_threads(
    modules_dir: Path, tmp_path: Path
) -> None:
    write_module(modules_dir, "lingers", code=LINGERS)
    env = environment(tmp_path, modules_dir)
    init_store(Settings(database_url=env["RUNLEDGER_DATABASE_URL"]))  # setup, not under test
    proc = runner_process(tmp_path, env)
    try:
        assert proc.stdout is not None
        assert "ticking" in proc.stdout.readline()  # loaded and in its loop
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        seconds = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()  # this test's own child, by its pid
            proc.wait(timeout=10)
    assert seconds < BOUND_S
    assert proc.returncode == 0, err
    assert "stopped after" in out
    assert "module lingers left 2 thread(s) running" in err


# --- an import or a register that loops for ever is stopped ---------------------------------------


def cpu_used_over(seconds: float) -> float:
    began = time.process_time()
    time.sleep(seconds)
    return time.process_time() - began


def loader_on(modules_dir: Path, registry: Registry | None = None) -> Loader:
    return Loader(
        registry or Registry(),
        lambda name: ModuleEvents(name, unused, unused),
        {},
        register_budget_s=0.3,
    )


@pytest.mark.parametrize(
    ("code", "call", "thread"),
    [
        (SPIN_IMPORT, "importing it", "module-import-spin"),
        (SPIN_REGISTER, "register()", "module-register-spin"),
    ],
)
def test_an_endless_loop_at_load_is_stopped_and_burns_no_more_cpu(
    modules_dir: Path, code: str, call: str, thread: str
) -> None:
    write_module(modules_dir, "a-spin", name="spin", code=code)
    write_module(modules_dir, "b-quick", name="quick", site="shard-2")
    began = time.monotonic()
    found = by_name(loader_on(modules_dir).load([modules_dir]))
    # The 0.3 s budget and the grace to stop, with room for a busy machine's scheduling.
    assert time.monotonic() - began < 0.3 + STOP_GRACE_S + 5.0
    assert found["spin"].status == "startup_failed"
    assert found["spin"].reason == f"{call} did not finish within 0.3s and was stopped"
    assert found["quick"].status == "loaded"
    assert thread not in {t.name for t in threading.enumerate()}
    assert cpu_used_over(0.5) < 0.2  # a spinning thread would use all of it


# --- a module cannot forge its owner or reach core through its context ----------------------------


@pytest.fixture
def forged(store_url: str, modules_dir: Path) -> Iterator[Runledger]:
    write_module(modules_dir, "alpha", site="shard-a", code=ZONES)
    write_module(modules_dir, "forger", site="shard-f", code=FORGER)
    rl = bootstrap(
        Settings(database_url=store_url, builtin_modules="", modules_dir=str(modules_dir))
    )
    yield rl
    rl.close()


def zone_statuses(rl: Runledger) -> dict[str, str]:
    rl.projector.catch_up()
    (run,) = rl.queries.running_runs(10)
    return {e.ref: e.status for e in rl.queries.entries(run) if e.kind != "@step"}


def test_a_module_that_rewrites_its_context_still_cannot_expire_another_modules_entry(
    forged: Runledger,
) -> None:
    forged.runs.start(
        {
            "name": "owned",
            "phases": [
                {
                    "id": "p",
                    "advance": "manual",
                    "steps": [{"id": "z", "action": "alpha.zone", "params": {"name": "z1"}}],
                }
            ],
        }
    )
    forged.runner("w1").tick()
    assert zone_statuses(forged) == {"z1": "live"}
    forger = sys.modules["runledger_module_forger"]
    assert forger.forge() == {"expired": 0}
    assert set(forger.attempts.values()) == {"refused"}
    assert zone_statuses(forged) == {"z1": "live"}


CORE_TYPES = (Registry, ModuleRegistrar, Reconciler, LedgerApp, Ledger, Loader, Runledger)


def reachable(root: object, depth: int = 3) -> Iterator[object]:
    """Everything reachable from ``root`` through plain attributes (not dunders)."""
    yield root
    if depth == 0 or isinstance(root, str | int | float | Path):
        return
    for name in dir(root):
        if name.startswith("__"):
            continue
        try:
            value = getattr(root, name)
        except Exception:
            continue
        yield from reachable(value, depth - 1)


def test_a_modules_context_offers_its_own_verbs_and_no_path_to_core(forged: Runledger) -> None:
    assert forged.loader is not None
    ctx = forged.loader.context("forger")
    public = {name for name in dir(ctx) if not name.startswith("_")}
    assert public == {
        "action",
        "lease",
        "events",
        "log",
        "settings",
        "on_close",
        "name",
        "site",
        "folder",
    }
    assert {n for n in dir(ctx.events) if not n.startswith("_")} == {"reconcile", "expired"}
    assert not [found for found in reachable(ctx) if isinstance(found, CORE_TYPES)]
    assert not [
        found
        for found in reachable(ctx)
        if isinstance(getattr(found, "__self__", None), CORE_TYPES)
    ]


def test_registering_after_register_returned_is_refused(forged: Runledger) -> None:
    with pytest.raises(ValueError, match="after register\\(\\) returned"):
        sys.modules["runledger_module_forger"].late()
    assert "forger.late" not in forged.registry.actions


# --- a module is given its own settings only ------------------------------------------------------


def test_a_module_sees_only_its_own_prefix_and_the_names_it_declared(
    modules_dir: Path, tmp_path: Path
) -> None:
    write_module(modules_dir, "spy", settings=["GAME_REGION"], code=SPY)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    environ = {
        "RUNLEDGER_DATABASE_URL": url,
        "RUNLEDGER_MODULES_DIR": str(modules_dir),
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        "RUNLEDGER_SANDBOX_BUDGET_MS": "700",
        "RUNLEDGER_OTHER_SECRET": "x",
        "RUNLEDGER_SPY_TOKEN": "t",
        "RUNLEDGER_REDIS_URL": "redis://secret@elsewhere:6379/0",
        "POSTGRES_PASSWORD": "hunter2",
        "GAME_REGION": "eu",
        "HOME": "/root",
    }
    init_store(Settings(database_url=url))
    with bootstrap(Settings.from_env(environ)) as rl:
        assert by_name(rl.modules)["spy"].status == "loaded"
        assert rl.loader is not None
        sandbox = rl.loader.context("sandbox").settings
    assert sys.modules["runledger_module_spy"].seen == {
        "RUNLEDGER_SPY_TOKEN": "t",
        "GAME_REGION": "eu",
    }
    assert sandbox == {
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        "RUNLEDGER_SANDBOX_BUDGET_MS": "700",
    }


@pytest.mark.parametrize(
    ("declared", "why"),
    [
        ("RUNLEDGER_DATABASE_URL", "is the ledger's own setting"),
        ("POSTGRES_PASSWORD", "is the ledger's own setting"),
        ("SQLITE_DBNAME", "is the ledger's own setting"),
        ("PERSISTENCE_MODULE", "is the ledger's own setting"),
        ("RUNLEDGER_MODULES_DIR", "is core's own setting"),
        ("RUNLEDGER_OTHER_SECRET", "is not under this module's own prefix RUNLEDGER_SPY_"),
    ],
)
def test_a_manifest_declaring_a_setting_that_is_not_its_own_fails_before_its_code_runs(
    modules_dir: Path, tmp_path: Path, declared: str, why: str
) -> None:
    marker = tmp_path / "imported"
    write_module(modules_dir, "spy", settings=[declared], code=marking(marker))
    (status,) = loader_on(modules_dir).load([modules_dir])
    assert status.status == "startup_failed"
    assert status.reason == f"module.toml: settings: {declared} {why}"
    assert not marker.exists()


def test_a_module_whose_settings_prefix_overlaps_a_loaded_ones_is_refused(
    modules_dir: Path,
) -> None:
    write_module(modules_dir, "a", name="spy", code=SPY)
    write_module(modules_dir, "b", name="spy_x", site="shard-2", code=SPY)
    write_module(modules_dir, "c", name="spy-x", site="shard-3", code=SPY)
    found = by_name(loader_on(modules_dir).load([modules_dir]))
    assert found["spy"].status == "loaded"
    assert found["spy_x"].reason == (
        "its settings prefix RUNLEDGER_SPY_X_ overlaps module 'spy''s RUNLEDGER_SPY_: "
        "one would read the other's"
    )
    assert (found["spy-x"].reason or "").startswith("its settings prefix RUNLEDGER_SPY_X_")


# --- every hostile case, as an operator sees it ---------------------------------------------------


@pytest.mark.slow
def test_runledger_modules_gives_a_reason_for_each_hostile_module_that_fails_to_load(
    modules_dir: Path, tmp_path: Path
) -> None:
    write_module(modules_dir, "a-spin", name="spin", site="s1", code=SPIN_IMPORT)
    write_module(
        modules_dir,
        "b-credentials",
        name="thief",
        site="s2",
        settings=["RUNLEDGER_DATABASE_URL"],
        code=SPY,
    )
    write_module(
        modules_dir,
        "c-other",
        name="peeker",
        site="s3",
        settings=["RUNLEDGER_OTHER_SECRET"],
        code=SPY,
    )
    write_module(modules_dir, "d-forger", name="forger", site="s4", code=FORGER)
    write_module(modules_dir, "e-lingers", name="lingers", site="s5", code=LINGERS)
    # The spinning import burns a core until its budget is out: 2 s here, not the default 10.
    env = environment(
        tmp_path, modules_dir, RUNLEDGER_OTHER_SECRET="x", RUNLEDGER_MODULE_LOAD_BUDGET_S="2"
    )
    init_store(Settings(database_url=env["RUNLEDGER_DATABASE_URL"]))  # setup, not under test
    seconds, done = timed("modules", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    rows = table(done.stdout)
    assert rows["spin"][1:] == [
        "startup_failed",
        "",
        "",
        "importing it did not finish within 2s and was stopped",
    ]
    assert rows["thief"][4] == (
        "module.toml: settings: RUNLEDGER_DATABASE_URL is the ledger's own setting"
    )
    assert rows["peeker"][4] == (
        "module.toml: settings: RUNLEDGER_OTHER_SECRET is not under "
        "this module's own prefix RUNLEDGER_PEEKER_"
    )
    assert (rows["forger"][1], rows["lingers"][1]) == ("loaded", "loaded")
    assert "module lingers left 2 thread(s) running" in done.stderr
    assert seconds < 2 + STOP_GRACE_S + BOUND_S
    assert "Traceback" not in done.stdout + done.stderr
