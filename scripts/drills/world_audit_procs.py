"""The world-audit drill's processes: its runners, which it kills and freezes, and the people
who ask for cleanup again through the CLI. Each is ended by its own pid, never by a name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

ROOT = Path(__file__).resolve().parents[2]
CLI = "from runledger.application.cli.app import main; main()"


@dataclass
class Runners:
    """One slot per runner; each incarnation of a slot has a name of its own (r2, r2.2, ...)."""

    folder: Path
    env: dict[str, str]
    knobs: tuple[str, ...] = ()
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # slot -> process
    names: dict[str, str] = field(default_factory=dict)  # slot -> its worker now
    incarnations: Counter[str] = field(default_factory=Counter)
    frozen: dict[str, threading.Timer] = field(default_factory=dict)  # slot -> its thaw
    died: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, slot: str) -> None:
        self.incarnations[slot] += 1
        n = self.incarnations[slot]
        worker = self.names[slot] = slot if n == 1 else f"{slot}.{n}"
        command = [sys.executable, "-m", "scripts.drills.world_audit_runner", "--worker", worker]
        # Files, not pipes: nobody reads a pipe while the runner works, and a full one blocks it.
        with self._log(worker, "out").open("wb") as out, self._log(worker, "err").open("wb") as err:
            self.procs[slot] = subprocess.Popen(
                [*command, *self.knobs], cwd=ROOT, env=self.env, stdout=out, stderr=err
            )

    def kill(self, slot: str) -> str:
        """SIGKILL (a frozen process dies too), and start the slot again at once."""
        proc, worker = self.procs[slot], self.names[slot]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with self._lock:
            self.frozen.pop(slot, None)
        self.start(slot)
        return worker

    def freeze(self, slot: str, seconds: float) -> None:
        """SIGSTOP, and SIGCONT ``seconds`` later from a timer of its own: the drill's loop may
        itself be waiting for a lock the frozen runner holds."""
        proc = self.procs[slot]
        proc.send_signal(signal.SIGSTOP)
        thaw = threading.Timer(seconds, self._thaw, (slot, proc))
        thaw.daemon = True
        with self._lock:
            self.frozen[slot] = thaw
        thaw.start()

    def _thaw(self, slot: str, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if self.frozen.get(slot) is not None and self.procs[slot] is proc:
                del self.frozen[slot]
            proc.send_signal(signal.SIGCONT)  # nothing, once the process has been reaped

    def thaw(self) -> None:
        with self._lock:
            frozen, self.frozen = self.frozen, {}
        for slot, timer in frozen.items():
            timer.cancel()
            self.procs[slot].send_signal(signal.SIGCONT)

    def restart_the_dead(self) -> None:
        """A runner that dies on its own is a finding: noted with its stderr, then replaced."""
        for slot, proc in list(self.procs.items()):
            if proc.poll() is not None:
                worker = self.names[slot]
                tail = self._log(worker, "err").read_text(errors="replace")[-1500:]
                self.died.append(f"{worker} exited {proc.returncode} on its own: {tail}")
                self.start(slot)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM to all at once: each finishes its call in flight and waits its grace."""
        self.thaw()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for slot, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.died.append(f"{self.names[slot]} ignored SIGTERM for {timeout:g}s")
            if proc.returncode not in (0, None):
                self.died.append(f"{self.names[slot]} stopped with exit code {proc.returncode}")
        self.end()

    def end(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()  # SIGKILL to this child's own pid
                proc.wait(timeout=30)

    def _log(self, worker: str, what: str) -> Path:
        return self.folder / f"{worker}.{what}"


@dataclass
class People:
    """People asking for cleanup again (``runledger cleanup RUN --by NAME``), a few at a time."""

    folder: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    asked: int = 0
    exits: Counter[int] = field(default_factory=Counter)

    def busy(self) -> int:
        for proc in [p for p in self.procs if p.poll() is not None]:
            self.exits[proc.returncode] += 1
            self.procs.remove(proc)
        return len(self.procs)

    def retry(self, run_id: UUID) -> None:
        self.asked += 1
        by = f"person-{self.asked}"
        with (self.folder / f"{by}.log").open("wb") as out:
            command = [sys.executable, "-c", CLI, "cleanup", str(run_id), "--by", by]
            proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=out, stderr=out)
        self.procs.append(proc)

    def wait(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self.busy()


def child_env(**settings: str) -> dict[str, str]:
    """The drill's processes' environment: this one's, the drill's settings, and the project
    first on the path (the drill may run from a copy of the tree)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    pool = {"POSTGRES_POOL_SIZE": "2", "POSTGRES_MAX_OVERFLOW": "4"}
    return {**os.environ, **pool, **settings, "PYTHONPATH": path}
