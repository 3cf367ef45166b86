"""Loading modules from folders: one module per site (W19), a failure is only that module's, and
a module's context is bound to its own name."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.deadline import STOP_GRACE_S
from runledger.application.modules.loader import Loader, ModuleContext, ModuleEvents, ModuleStatus
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings

GOOD = """
def register(ctx):
    ctx.action(ctx.name + ".spawn",
               perform=lambda params, idempotency_key, run_id: {"ok": True, "resources": []},
               revert=lambda resources, idempotency_key, run_id: {"ok": True})
    ctx.lease(ctx.name + ".door", apply=lambda target, value, run_id, idempotency_key: None,
              restore=lambda baseline, expected, run_id, target, idempotency_key: {"ok": True})
"""


def write_module(
    root: Path,
    folder: str,
    *,
    name: str | None = None,
    site: str = "shard-1",
    api: str = "2.0",
    entry: str = "code.py:register",
    code: str | None = GOOD,
    settings: list[str] | None = None,
) -> Path:
    """One module folder with a manifest and, unless ``code`` is None, its code."""
    where = root / folder
    where.mkdir(parents=True)
    manifest = f'name = "{name or folder}"\nsite = "{site}"\napi = "{api}"\nentry = "{entry}"\n'
    if settings is not None:
        manifest += f"settings = {settings!r}\n".replace("'", '"')
    (where / "module.toml").write_text(manifest, encoding="utf-8")
    if code is not None:
        (where / "code.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return where


def marking(marker: Path, then: str = "") -> str:
    """Module code whose top level leaves a file behind: proof that it was imported."""
    return f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n{then}\n"


@pytest.fixture
def modules_dir(tmp_path: Path) -> Path:
    where = tmp_path / "modules"
    where.mkdir()
    return where


Load = Callable[..., Runledger]


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    """Bootstrap on an SQLite store with no built-in modules, loading ``modules_dir``."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    opened: list[Runledger] = []

    def make(modules_dir: Path, url: str = url, builtin: str = "") -> Runledger:
        rl = bootstrap(
            Settings(database_url=url, builtin_modules=builtin, modules_dir=str(modules_dir))
        )
        opened.append(rl)
        return rl

    yield make
    for rl in opened:
        rl.close()


def by_name(statuses: list[ModuleStatus]) -> dict[str, ModuleStatus]:
    return {s.name or Path(s.folder).name: s for s in statuses}


# --- W19: one module per site ---------------------------------------------------------------------


def test_the_second_module_for_a_site_fails_and_names_the_module_holding_it(
    load: Load, modules_dir: Path
) -> None:
    write_module(modules_dir, "a-first", name="alpha")
    write_module(modules_dir, "b-second", name="beta")
    rl = load(modules_dir)
    found = by_name(rl.modules)
    assert [s.name for s in rl.modules] == ["alpha", "beta"]
    assert (found["alpha"].status, found["alpha"].actions) == ("loaded", ["alpha.spawn"])
    assert found["beta"].status == "startup_failed"
    assert found["beta"].reason == "site 'shard-1' is already held by module 'alpha'"
    assert (found["beta"].actions, found["beta"].leases) == ([], [])
    assert set(rl.registry.actions) == {"alpha.spawn"}
    assert set(rl.registry.leases) == {"alpha.door"}


def test_folders_are_taken_in_name_order_not_by_module_name(load: Load, modules_dir: Path) -> None:
    write_module(modules_dir, "a-folder", name="zulu")
    write_module(modules_dir, "b-folder", name="alpha")
    found = by_name(load(modules_dir).modules)
    assert found["zulu"].status == "loaded"
    assert found["alpha"].reason == "site 'shard-1' is already held by module 'zulu'"


def test_a_later_module_for_a_held_site_is_refused_before_its_code_is_imported(
    load: Load, modules_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "beta-was-imported"
    write_module(modules_dir, "a-first", name="alpha")
    write_module(
        modules_dir,
        "b-second",
        name="beta",
        code=marking(marker, "raise RuntimeError('beta must never run')"),
    )
    found = by_name(load(modules_dir).modules)
    assert not marker.exists()
    assert found["beta"].reason == "site 'shard-1' is already held by module 'alpha'"


def test_the_first_module_holds_its_site_even_when_its_own_code_fails(
    load: Load, modules_dir: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "alpha-was-imported", tmp_path / "beta-was-imported"
    write_module(
        modules_dir,
        "a-first",
        name="alpha",
        code=marking(first, "raise ImportError('alpha is broken')"),
    )
    write_module(modules_dir, "b-second", name="beta", code=marking(second))
    write_module(modules_dir, "c-elsewhere", name="gamma", site="shard-2")
    found = by_name(load(modules_dir).modules)
    assert first.exists() and not second.exists()
    assert found["alpha"].status == "startup_failed"
    assert found["alpha"].reason == "import failed: ImportError: alpha is broken"
    assert found["beta"].reason == "site 'shard-1' is already held by module 'alpha'"
    assert found["gamma"].status == "loaded"


def test_a_module_in_the_folder_cannot_take_a_built_in_modules_site(
    load: Load, modules_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    write_module(modules_dir, "mine", site="sandbox", code=marking(marker))
    rl = bootstrap(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'ledger.sqlite3'}",
            modules_dir=str(modules_dir),
            module_settings={"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3")},
        )
    )
    try:
        found = by_name(rl.modules)
    finally:
        rl.close()
    assert found["sandbox"].status == "loaded"
    assert found["mine"].reason == "site 'sandbox' is already held by module 'sandbox'"
    assert not marker.exists()


# --- each failure is that module's own, with a reason a person can read ---------------------------


def no_manifest(root: Path, folder: str) -> None:
    (root / folder).mkdir()
    (root / folder / "code.py").write_text(GOOD)


def bad_toml(root: Path, folder: str) -> None:
    where = write_module(root, folder, site=folder)
    (where / "module.toml").write_text(f'name = "{folder}"\nsite = \n', encoding="utf-8")


def missing_field(root: Path, folder: str) -> None:
    where = write_module(root, folder, site=folder)
    (where / "module.toml").write_text(
        f'name = "{folder}"\nsite = "{folder}"\napi = "2.0"\n', encoding="utf-8"
    )


def broken(**manifest: Any) -> Callable[[Path, str], Any]:
    """A module on a site of its own, with ``manifest`` or ``code`` as given."""
    return lambda root, folder: write_module(root, folder, site=folder, **manifest)


FAILURES: dict[str, tuple[Callable[[Path, str], Any], str]] = {
    "no manifest": (no_manifest, "no module.toml in the folder"),
    "bad TOML": (bad_toml, "module.toml is not valid TOML: "),
    "missing field": (missing_field, "module.toml: entry: is required"),
    "api 3.0": (
        broken(api="3.0"),
        "module API 3.0 is not compatible with this core's MODULE_API 2.0",
    ),
    "api 2.9": (
        broken(api="2.9"),
        "module API 2.9 is not compatible with this core's MODULE_API 2.0",
    ),
    "api 1.0": (
        broken(api="1.0"),
        "module API 1.0 is not compatible with this core's MODULE_API 2.0: 2.0 passes "
        "idempotency_key to apply and restore, and revert must end (fence) its key "
        "— see MODULES.md",
    ),
    "api not a version": (broken(api="one"), "module.toml: api: must be a version such as 2.0"),
    "entry file missing": (
        broken(entry="missing.py:register"),
        "import failed: FileNotFoundError: ",
    ),
    "entry names no function": (
        broken(entry="code.py:nothing"),
        "entry 'code.py:nothing' names no function",
    ),
    "entry outside the folder": (
        broken(entry="../x.py:register"),
        "entry '../x.py:register' points outside the module folder",
    ),
    "import error": (
        broken(code="import no_such_package_anywhere\n"),
        "import failed: ModuleNotFoundError: No module named 'no_such_package_anywhere'",
    ),
    "syntax error": (broken(code="def register(:\n"), "import failed: SyntaxError: "),
    "register raises": (
        broken(code="def register(ctx):\n    raise ValueError('no shard')\n"),
        "register() raised ValueError: no shard",
    ),
}


@pytest.mark.parametrize("kind", list(FAILURES))
def test_a_broken_module_fails_alone_with_a_readable_reason(
    load: Load, modules_dir: Path, kind: str
) -> None:
    make, reason = FAILURES[kind]
    write_module(modules_dir, "a-good", name="alpha")
    make(modules_dir, "broken")
    write_module(modules_dir, "z-good", name="zulu", site="shard-2")
    found = by_name(load(modules_dir).modules)
    assert found["broken"].status == "startup_failed"
    assert (found["broken"].reason or "").startswith(reason), found["broken"].reason
    assert (found["alpha"].status, found["zulu"].status) == ("loaded", "loaded")


def test_a_module_written_for_api_1_is_refused_before_its_code_runs_with_what_2_0_changed(
    load: Load, modules_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    write_module(modules_dir, "old", api="1.0", code=marking(marker, GOOD))
    (status,) = load(modules_dir).modules
    assert (status.status, status.reason) == (
        "startup_failed",
        "module API 1.0 is not compatible with this core's MODULE_API 2.0: 2.0 passes "
        "idempotency_key to apply and restore, and revert must end (fence) its key "
        "— see MODULES.md",
    )
    assert not marker.exists()


def test_every_kind_of_failure_side_by_side_still_leaves_a_working_service(
    load: Load, modules_dir: Path
) -> None:
    for i, (make, _) in enumerate(FAILURES.values()):
        make(modules_dir, f"f{i:02d}")
    write_module(modules_dir, "good", name="alpha", site="shard-ok")
    rl = load(modules_dir)
    statuses = [s.status for s in rl.modules]
    assert statuses.count("startup_failed") == len(FAILURES)
    assert by_name(rl.modules)["alpha"].status == "loaded"
    run = rl.runs.start(
        {"name": "after", "phases": [{"id": "p", "steps": [{"id": "s", "action": "alpha.spawn"}]}]}
    )
    rl.runner("w1").tick()
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), 3)
    assert row is not None and row.status == "completed"


def test_a_register_that_raises_keeps_none_of_what_it_registered_first(
    load: Load, modules_dir: Path
) -> None:
    write_module(
        modules_dir,
        "a-half",
        name="half",
        code="""
        def register(ctx):
            ctx.action("half.spawn", perform=lambda **_: {"ok": True, "resources": []})
            ctx.lease("half.door", apply=lambda **_: None, restore=lambda **_: None)
            raise RuntimeError("the shard went away mid-registration")
    """,
    )
    write_module(
        modules_dir,
        "b-whole",
        name="whole",
        site="shard-2",
        code="""
        def register(ctx):
            ctx.action("half.spawn", perform=lambda **_: {"ok": True, "resources": []})
    """,
    )
    rl = load(modules_dir)
    found = by_name(rl.modules)
    assert found["half"].reason == (
        "register() raised RuntimeError: the shard went away mid-registration"
    )
    assert (found["half"].actions, found["half"].leases) == ([], [])
    assert "half.door" not in rl.registry.leases
    assert found["whole"].status == "loaded"
    assert rl.registry.actions["half.spawn"].module == "whole"


def unused(*_: Any) -> Any:
    raise AssertionError("no module calls its events while loading here")


def test_a_register_that_hangs_is_abandoned_at_its_budget_and_the_next_module_loads(
    modules_dir: Path,
) -> None:
    write_module(
        modules_dir,
        "a-slow",
        name="slow",
        code="""
        import time

        def register(ctx):
            ctx.action("slow.early", perform=lambda **_: None)
            time.sleep(1.0)
            ctx.action("slow.late", perform=lambda **_: None)
    """,
    )
    write_module(modules_dir, "b-quick", name="quick", site="shard-2")
    registry = Registry()
    loader = Loader(
        registry, lambda name: ModuleEvents(name, unused, unused), {}, register_budget_s=0.3
    )
    began = time.monotonic()
    found = by_name(loader.load([modules_dir]))
    # a sleep cannot be interrupted: the loader gives up on it after its stop grace
    assert time.monotonic() - began < 0.3 + STOP_GRACE_S + 0.15
    assert found["slow"].reason == (
        "register() did not finish within 0.3s; it could not be stopped and was left running"
    )
    assert found["quick"].status == "loaded"
    (abandoned,) = [t for t in threading.enumerate() if t.name == "module-register-slow"]
    abandoned.join(5)  # the abandoned call finishes in the background, into nothing
    assert not abandoned.is_alive()
    assert set(registry.actions) == {"quick.spawn"}


def test_a_module_that_exits_while_importing_fails_alone(load: Load, modules_dir: Path) -> None:
    write_module(
        modules_dir,
        "a-exits",
        name="exits",
        code="import sys\nsys.exit('this module thinks it is a script')\n",
    )
    write_module(modules_dir, "b-good", name="good", site="shard-2")
    try:
        found = by_name(load(modules_dir).modules)
    except SystemExit:
        pytest.fail("a module's sys.exit() at import stopped the whole service")
    assert found["exits"].status == "startup_failed"
    assert found["good"].status == "loaded"


def test_a_module_written_in_house_style_with_a_dataclass_loads(
    load: Load, modules_dir: Path
) -> None:
    write_module(
        modules_dir,
        "styled",
        code="""
        from __future__ import annotations

        from dataclasses import dataclass


        @dataclass
        class Shard:
            name: str


        def register(ctx: object) -> None:
            ctx.action("styled.spawn", perform=lambda **_: {"ok": True, "resources": []})
    """,
    )
    found = by_name(load(modules_dir).modules)
    assert found["styled"].status == "loaded", found["styled"].reason


# --- runledger modules ----------------------------------------------------------------------------


def runledger(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ.update(env, COLUMNS="400")
    return subprocess.run(
        [sys.executable, "-c", "from runledger.application.cli.app import main; main()", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_runledger_modules_lists_every_module_with_site_status_reason_actions_and_leases(
    modules_dir: Path, tmp_path: Path
) -> None:
    write_module(modules_dir, "a-first", name="alpha")
    write_module(modules_dir, "b-second", name="beta")
    write_module(modules_dir, "c-old", name="gamma", site="shard-3", api="3.0")
    (modules_dir / "d-empty").mkdir()
    env = {
        "RUNLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.sqlite3'}",
        "RUNLEDGER_MODULES_DIR": str(modules_dir),
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
    }
    init_store(Settings(database_url=env["RUNLEDGER_DATABASE_URL"]))  # setup, not under test
    done = runledger("modules", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in done.stdout.splitlines()
        if line.count("│") == 7
    }
    assert rows == {
        "sandbox": [
            "sandbox",
            "loaded",
            "sandbox.spawn, sandbox.zone",
            "sandbox.spawn_rate, sandbox.weather",
            "",
        ],
        "alpha": ["shard-1", "loaded", "alpha.spawn", "alpha.door", ""],
        "beta": [
            "shard-1",
            "startup_failed",
            "",
            "",
            "site 'shard-1' is already held by module 'alpha'",
        ],
        "gamma": [
            "shard-3",
            "startup_failed",
            "",
            "",
            "module API 3.0 is not compatible with this core's MODULE_API 2.0",
        ],
        "(d-empty)": ["", "startup_failed", "", "", "no module.toml in the folder"],
    }
    assert "Traceback" not in done.stdout + done.stderr


# --- the context is bound to the module's own name ------------------------------------------------


ZONES = """
def register(ctx):
    gone = ctx.folder / "gone.txt"  # the refs this module's world has lost, one a line

    def in_force(resources, run_id):
        lost = gone.read_text().split() if gone.exists() else []
        return {"ok": True, "in_force": [r["ref"] for r in resources if r["ref"] not in lost]}

    ctx.action(ctx.name + ".zone",
               perform=lambda params, idempotency_key, run_id: {
                   "ok": True, "resources": [{"kind": "zone", "ref": params["name"]}]},
               revert=lambda resources, idempotency_key, run_id: {"ok": True},
               reconcile=in_force)
    ctx.lease(ctx.name + ".door",
              apply=lambda target, value, run_id, idempotency_key: {"ok": True, "baseline": "shut",
                                                   "applied": value},
              restore=lambda baseline, expected, run_id, target, idempotency_key: {"ok": True})
"""


@pytest.fixture
def owners(store_url: str, modules_dir: Path) -> Iterator[Runledger]:
    write_module(modules_dir, "alpha", site="shard-a", code=ZONES)
    write_module(modules_dir, "beta", site="shard-b", code=ZONES)
    rl = bootstrap(
        Settings(database_url=store_url, builtin_modules="", modules_dir=str(modules_dir))
    )
    yield rl
    rl.close()


def context(rl: Runledger, name: str) -> ModuleContext:
    assert rl.loader is not None
    return rl.loader.context(name)


def statuses(rl: Runledger) -> dict[str, str]:
    rl.projector.catch_up()
    (run,) = rl.queries.running_runs(10)
    return {e.ref: e.status for e in rl.queries.entries(run) if e.kind != "@step"}


def zone_run(rl: Runledger, action: str, *extra: dict[str, Any]) -> None:
    rl.runs.start(
        {
            "name": "owned",
            "phases": [
                {
                    "id": "p",
                    "advance": "manual",
                    "steps": [{"id": "z", "action": action, "params": {"name": "z1"}}, *extra],
                }
            ],
        }
    )
    rl.runner("w1").tick()


def test_a_modules_expiry_of_another_modules_zone_changes_nothing(owners: Runledger) -> None:
    zone_run(owners, "alpha.zone")
    beta, alpha = context(owners, "beta"), context(owners, "alpha")
    assert beta.events.expired(kind="zone", ref="z1") == {"expired": 0}
    assert statuses(owners) == {"z1": "live"}
    assert alpha.events.expired(kind="zone", ref="z1") == {"expired": 1}
    assert statuses(owners) == {"z1": "expired"}


def test_a_modules_reconcile_asks_only_about_its_own_entries(owners: Runledger) -> None:
    zone_run(owners, "alpha.zone")
    (context(owners, "alpha").folder / "gone.txt").write_text("z1\n")
    summary = context(owners, "beta").events.reconcile()
    assert (summary.asked, summary.orphaned) == (0, 0)
    assert statuses(owners) == {"z1": "live"}
    summary = context(owners, "alpha").events.reconcile()
    assert (summary.asked, summary.orphaned) == (1, 1)
    assert statuses(owners) == {"z1": "orphaned"}


def test_the_context_takes_no_owner_from_the_module(owners: Runledger) -> None:
    zone_run(owners, "alpha.zone")
    beta: Any = context(owners, "beta").events
    with pytest.raises(TypeError):
        beta.expired("zone", "z1")
    with pytest.raises(TypeError):
        beta.expired(kind="zone", ref="z1", module="alpha")
    assert statuses(owners) == {"z1": "live"}


def test_a_module_named_core_cannot_expire_another_modules_lease(
    store_url: str, modules_dir: Path
) -> None:
    write_module(modules_dir, "alpha", site="shard-a", code=ZONES)
    write_module(modules_dir, "core", site="shard-c", code=ZONES)
    rl = bootstrap(
        Settings(database_url=store_url, builtin_modules="", modules_dir=str(modules_dir))
    )
    try:
        zone_run(
            rl,
            "alpha.zone",
            {
                "id": "l",
                "action": "core.lease",
                "params": {
                    "lease": "alpha.door",
                    "target": "gate",
                    "value": "open",
                    "duration_s": 600,
                },
            },
        )
        assert statuses(rl)["alpha.door#gate"] == "live"
        core = by_name(rl.modules)["core"]
        if core.status == "loaded":
            context(rl, "core").events.expired(kind="override", ref="alpha.door#gate")
        assert statuses(rl)["alpha.door#gate"] == "live"
    finally:
        rl.close()


def test_a_module_whose_import_hangs_is_abandoned_and_the_next_module_loads(
    modules_dir: Path,
) -> None:
    write_module(modules_dir, "a-stuck", name="stuck", code="import time\ntime.sleep(2)\n")
    write_module(modules_dir, "b-quick", name="quick", site="shard-2")
    registry = Registry()
    loader = Loader(
        registry, lambda name: ModuleEvents(name, unused, unused), {}, register_budget_s=0.3
    )
    began = time.monotonic()
    found = by_name(loader.load([modules_dir]))
    assert time.monotonic() - began < 1.5
    assert (found["stuck"].reason or "").startswith("importing it did not finish within 0.3s")
    assert found["quick"].status == "loaded"


def test_a_modules_folder_that_does_not_exist_is_reported(load: Load, tmp_path: Path) -> None:
    rl = load(tmp_path / "nowhere")
    assert [(m.status, m.reason) for m in rl.modules] == [
        ("startup_failed", "the modules folder does not exist")
    ]


def test_a_module_sees_its_own_settings_but_never_the_ledgers_credentials(
    modules_dir: Path,
) -> None:
    write_module(
        modules_dir,
        "peek",
        settings=["SHARED_REGION"],
        code="""
        seen = {}

        def register(ctx):
            seen.update(ctx.settings)
            ctx.settings["SHARED_REGION"] = "scribbled"
    """,
    )
    write_module(
        modules_dir,
        "second",
        site="shard-2",
        settings=["SHARED_REGION"],
        code="""
        seen = {}

        def register(ctx):
            seen.update(ctx.settings)
    """,
    )
    settings = {"RUNLEDGER_DATABASE_URL": "postgresql://u:secret@db/x", "RUNLEDGER_PEEK_X": "1"}
    environ = {"SHARED_REGION": "eu"}
    loader = Loader(
        Registry(), lambda name: ModuleEvents(name, unused, unused), settings, environ=environ
    )
    loader.load([modules_dir])
    first, second = (sys.modules[f"runledger_module_{n}"] for n in ("peek", "second"))
    assert first.seen == {"RUNLEDGER_PEEK_X": "1", "SHARED_REGION": "eu"}
    assert second.seen == {"SHARED_REGION": "eu"}
    assert environ["SHARED_REGION"] == "eu"


def test_a_module_that_fails_to_register_has_what_it_started_stopped(modules_dir: Path) -> None:
    write_module(
        modules_dir,
        "leaky",
        code="""
        stopped = []

        def register(ctx):
            ctx.on_close(lambda: stopped.append(True))
            raise RuntimeError("half way")
    """,
    )
    loader = Loader(Registry(), lambda name: ModuleEvents(name, unused, unused), {})
    [status] = loader.load([modules_dir])
    assert status.reason == "register() raised RuntimeError: half way"
    assert sys.modules["runledger_module_leaky"].stopped == [True]
