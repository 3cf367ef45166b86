"""Store trouble through the real CLI: one sentence naming the store, exit code 1, no traceback."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import ProjectionStuck
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.rebuild import rebuild
from tests.support.corrupt import RUN_STARTED, insert_raw, tables
from tests.support.forked_cli import ForkedCli
from tests.support.reading import EVERY_VIEW
from tests.support.world import World

SPEC = {
    "name": "Harvest",
    "phases": [
        {
            "id": "p",
            "advance": "manual",
            "steps": [
                {"id": "s", "action": "sandbox.spawn", "params": {"kind": "crow", "count": 1}}
            ],
        }
    ],
}


Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedCli]:
    """Each command in a fresh process, forked from one that imported the CLI once."""
    forked = ForkedCli(tmp_path_factory.mktemp("cli"))
    yield forked
    forked.close()


@pytest.fixture
def cli(server: ForkedCli) -> Cli:
    def run(folder: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {
            "RUNLEDGER_DATABASE_URL": url or f"sqlite:///{folder / 'ledger.sqlite3'}",
            "RUNLEDGER_SANDBOX_PATH": str(folder.parent / f"{folder.name}-sandbox.sqlite3"),
        }
        return server.run(*args, cwd=folder.parent, env=env)

    return run


def one_sentence(done: subprocess.CompletedProcess[str], *expected: str, code: int = 1) -> str:
    out = (done.stdout + done.stderr).strip()  # a rebuild's transient progress bar leaves \n
    assert done.returncode == code, out
    assert "Traceback" not in out and out.startswith("runledger: "), out
    assert len(out.strip().splitlines()) == 1, out
    for text in expected:
        assert text in out, out
    return out


def a_store(tmp_path: Path, runs: int = 1) -> Path:
    """A store with ``runs`` runs started, made in-process as the CLI's init and start would
    (the commands under test come after), and closed, as those processes would be."""
    folder = tmp_path / "store"
    folder.mkdir()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    sandbox = {"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "store-sandbox.sqlite3")}
    settings = Settings(database_url=f"sqlite:///{folder / 'ledger.sqlite3'}")
    settings = settings.model_copy(update={"module_settings": sandbox})
    init_store(settings)
    with bootstrap(settings) as rl:
        for _ in range(runs):
            rl.runs.start(SPEC)
    return folder


@contextmanager
def read_only(paths: list[Path]) -> Iterator[None]:
    """Truly read-only, also for root: chmod stops nobody as root, chattr +i stops everyone."""
    root = os.geteuid() == 0
    for path in paths:
        if root:
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
            if done.returncode:
                pytest.skip(f"cannot make {path} read-only here: {done.stderr.strip()}")
        else:
            path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        with pytest.raises(OSError):
            paths[0].open("r+b").close() if paths[0].is_file() else (paths[0] / "x").touch()
        yield
    finally:
        for path in paths:
            if root:
                subprocess.run(["chattr", "-i", str(path)], check=True)
            else:
                path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["the file", "the file and its folder"])
def test_a_read_only_store_is_read_when_its_projections_are_current(
    cli: Cli,
    tmp_path: Path,
    what: str,
) -> None:
    folder = a_store(tmp_path)
    run_id = cli(folder, "runs").stdout
    assert "Harvest" in run_id
    ledger = folder / "ledger.sqlite3"
    locked = [ledger] if what == "the file" else [ledger, folder]
    with read_only(locked):
        listed = cli(folder, "runs")
        assert listed.returncode == 0 and "Harvest" in listed.stdout, listed.stdout + listed.stderr
        shown = cli(folder, "projections")
        assert shown.returncode == 0, shown.stdout + shown.stderr
        one_sentence(
            cli(folder, "start", str(tmp_path / "spec.json")),
            "the store is read-only",
            f"SQLite file {ledger}",
        )
        one_sentence(cli(folder, "init"), "the store is read-only")


@pytest.mark.slow
def test_a_read_only_store_whose_projections_lag_says_it_cannot_catch_up(
    cli: Cli, tmp_path: Path
) -> None:
    folder = a_store(tmp_path, runs=2)
    with read_only([folder / "ledger.sqlite3", folder]):
        one_sentence(
            cli(folder, "runs"), "the store is read-only and its projections are", "events behind"
        )
        # a tick first records its runner, which is a write
        one_sentence(cli(folder, "tick"), "the store is read-only", "cannot be written")
        shown = cli(folder, "projections")
        assert shown.returncode == 0 and "not tried: the store is read-only" in shown.stdout


@pytest.mark.slow
def test_a_file_of_random_bytes_is_not_a_database(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "ledger.sqlite3").write_bytes(os.urandom(64 * 1024))
    for args in (["init"], ["runs"], ["tick"], ["projections"]):
        one_sentence(
            cli(folder, *args),
            f"the SQLite file {folder / 'ledger.sqlite3'} is not a "
            "database (corrupted or truncated)",
        )


@pytest.mark.slow
def test_a_store_cut_in_half_is_not_a_database(cli: Cli, tmp_path: Path) -> None:
    folder = a_store(tmp_path, runs=12)
    ledger = folder / "ledger.sqlite3"
    assert not (folder / "ledger.sqlite3-wal").exists()
    data = ledger.read_bytes()
    assert len(data) >= 8 * 4096
    ledger.write_bytes(data[: len(data) // 2])
    for args in (["runs"], ["tick"], ["start", str(tmp_path / "spec.json")]):
        one_sentence(cli(folder, *args), "is not a database (corrupted or truncated)")


@contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A real file system that fills up: a tmpfs of its own (root only)."""
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        pytest.skip(f"cannot mount a small disk here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill(folder: Path) -> Path:
    """Write until the file system says it has no room left."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out, pytest.raises(OSError) as raised:
        while True:
            out.write(b"\0" * 4096)
    assert raised.value.errno == errno.ENOSPC
    return filler


@pytest.mark.slow
def test_on_a_full_disk_writes_fail_in_one_sentence_and_an_idle_store_still_reads(
    cli: Cli,
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "store", "3m") as folder:
        (tmp_path / "spec.json").write_text(json.dumps(SPEC))
        assert cli(folder, "init").returncode == 0
        assert cli(folder, "start", str(tmp_path / "spec.json")).returncode == 0
        assert cli(folder, "runs").returncode == 0
        url = f"sqlite:///{folder / 'ledger.sqlite3'}"
        # a runner keeps the store open, as it would in production, and with it the -shm
        with bootstrap(Settings(database_url=url), Registry()) as rl:
            filler = fill(folder)
            runner = rl.runner("idle")
            stop = threading.Event()
            ticking = threading.Thread(target=runner.run, args=(0.01, stop))
            ticking.start()
            time.sleep(0.5)
            listed = cli(folder, "runs")
            # idle ticks on a full disk write only the runner's record and heartbeat, which
            # fail: said once, and the loop goes on
            assert (runner.trouble or "").startswith("the disk is full"), runner.trouble
            assert listed.returncode == 0 and "Harvest" in listed.stdout, listed.stdout
            one_sentence(
                cli(folder, "start", str(tmp_path / "spec.json")),
                f"the disk is full: the SQLite file {folder / 'ledger.sqlite3'} cannot grow",
                "free some space",
            )
            filler.unlink()
            deadline = time.monotonic() + 10
            while runner.trouble is not None and time.monotonic() < deadline:
                time.sleep(0.02)
            joined = runner.runner_id
            stop.set()
            ticking.join(10)
            assert not ticking.is_alive() and joined is not None  # it joined once clear
            assert cli(folder, "start", str(tmp_path / "spec.json")).returncode == 0


@pytest.mark.postgres
@pytest.mark.slow
def test_a_query_postgres_refuses_is_one_sentence(cli: Cli, pg_admin: str, tmp_path: Path) -> None:
    from tests.conftest import drop_pg_url, new_pg_url

    url = new_pg_url(pg_admin)
    folder = tmp_path / "cwd"
    folder.mkdir()
    try:
        assert cli(folder, "init", url=url).returncode == 0
        # The CLI refuses the bound itself now (a usage error, exit 2) before PostgreSQL sees it.
        one_sentence(cli(folder, "runs", "--limit", "-1", url=url), "runledger: ", code=2)
    finally:
        drop_pg_url(pg_admin, url)


def _fresh_url(engine: str, tmp_path: Path, pg_admin: str | None) -> str:
    if engine == "sqlite":
        return f"sqlite:///{tmp_path / f'fresh-{uuid.uuid4().hex[:8]}.sqlite3'}"
    return f"{pg_admin}?schema=t_init_{uuid.uuid4().hex[:10]}"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_many_inits_at_once_on_a_fresh_store_all_succeed(
    server: ForkedCli,
    engine: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    admin = request.getfixturevalue("pg_admin") if engine == "postgres" else None
    urls = [_fresh_url(engine, tmp_path, admin) for _ in range(4)]
    try:
        for url in urls:
            # Eight processes of the real CLI's init, let go at one moment on a fresh store:
            # forked from one that has imported the CLI, they race in init itself.
            done = server.run_together(
                [("init",)] * 8, cwd=tmp_path, env={"RUNLEDGER_DATABASE_URL": url}
            )
            assert [d.returncode for d in done] == [0] * 8, [d.stdout + d.stderr for d in done]
            with bootstrap(Settings(database_url=url), Registry()) as rl:
                assert rl.projector.positions() == dict.fromkeys(EVERY_VIEW, 0)
    finally:
        if admin is not None:
            with psycopg.connect(admin, autocommit=True) as conn:
                for url in urls:
                    conn.execute(f"DROP SCHEMA IF EXISTS {url.rsplit('=', 1)[1]} CASCADE")


def test_a_rebuild_that_fails_leaves_no_shadow_tables(rl: Runledger, world: World) -> None:
    from tests.application.test_projections import ledger_a_run

    ledger_a_run(rl)
    insert_raw(rl, RUN_STARTED, b"\xff\xfe not json")
    before = tables(rl)
    for verify in (False, True):
        with pytest.raises(ProjectionStuck):
            rebuild(rl.app, rl.backend, verify=verify)
        assert tables(rl) == before
        assert not [t for t in tables(rl) if t.endswith("_next")]


@pytest.mark.slow
def test_a_rebuild_that_fails_through_the_cli_leaves_no_shadow_tables(
    cli: Cli,
    rl: Runledger,
    store_url: str,
    tmp_path: Path,
) -> None:
    insert_raw(rl, RUN_STARTED, b"[1, 2")
    folder = tmp_path / "cwd"
    folder.mkdir()
    for args in (["rebuild"], ["rebuild", "runs", "--verify"]):
        one_sentence(cli(folder, *args, url=store_url), "cannot apply the event at position")
        assert not [t for t in tables(rl) if t.endswith("_next")]


@pytest.mark.postgres
@pytest.mark.slow
def test_a_read_only_postgres_is_read_when_current_and_says_when_it_cannot_catch_up(
    cli: Cli,
    server: ForkedCli,
    pg_admin: str,
    tmp_path: Path,
) -> None:
    """libpq's PGOPTIONS makes every session read-only, as a hot standby's are."""
    from tests.conftest import drop_pg_url, new_pg_url

    url = new_pg_url(pg_admin)
    folder = tmp_path / "cwd"
    folder.mkdir()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    read_only_env = {"PGOPTIONS": "-c default_transaction_read_only=on"}

    def ro(*args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "RUNLEDGER_DATABASE_URL": url,
            **read_only_env,
            "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        }
        return server.run(*args, cwd=folder, env=env)

    try:
        assert cli(folder, "init", url=url).returncode == 0
        assert cli(folder, "start", str(spec), url=url).returncode == 0
        assert cli(folder, "runs", url=url).returncode == 0
        listed = ro("runs")
        assert listed.returncode == 0 and "Harvest" in listed.stdout, listed.stdout
        one_sentence(ro("start", str(spec)), "the store is read-only: the PostgreSQL at")
        sandbox = {"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3")}
        behind = Settings(database_url=url, module_settings=sandbox)
        with bootstrap(behind) as rl:  # a start that nothing reads after: the views fall behind
            rl.runs.start(spec.read_text())
        one_sentence(ro("runs"), "the store is read-only and its projections are")
    finally:
        drop_pg_url(pg_admin, url)
