"""``runledger`` commands, each in a process of its own, forked from one that has already
imported the CLI: the process an operator's shell would start, less its second of imports.

The server (``python -m tests.support.forked_cli``, started by ``ForkedCli``) imports the CLI and
starts no thread, then reads one batch of commands a line (JSON: the arguments, the folder and
the environment of each). For each command it forks a child that points its standard streams at
files of its own (input at /dev/null, or a file holding what the test types), runs the CLI's
``main()`` and ends as the interpreter would: ``SystemExit``'s code, or a traceback and 1. A
batch's children start together; the server answers their exit statuses.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[2]
NO_CONFIG = "/nonexistent/runledger-tests"
"""A config folder that does not exist: the CLI finds no saved context and opens the store."""


def _serve() -> None:
    from runledger.application.cli.app import click_command, main

    click_command()  # built once here, as a process that runs more than one command builds it
    assert threading.active_count() == 1, "a thread would not survive the fork"
    for line in sys.stdin:
        batch = json.loads(line)
        sys.stdout.flush()
        # Every child of a batch waits on one pipe, so they all start when the last is forked.
        gate, opened = os.pipe()
        pids = [_fork(request, main, gate, opened) for request in batch]
        os.close(gate)
        os.close(opened)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        print(json.dumps({"codes": codes}), flush=True)


def _fork(request: dict[str, Any], main: Callable[[], None], gate: int, opened: int) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        os.close(opened)
        os.read(gate, 1)  # the end of file, once the server has forked the whole batch
        os.close(gate)
        _child(request, main)
    finally:
        os._exit(70)  # a child never goes back to serving, whatever went wrong


def _child(request: dict[str, Any], main: Callable[[], None]) -> NoReturn:
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in (
        (0, request.get("in") or os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the server's may hold the next requests)
    sys.argv = ["-c", *request["args"]]
    sys.modules["__main__"].__package__ = None  # as under `python -c`: click names it "-c"
    os._exit(_exit_code(main))


def _exit_code(main: Callable[[], None]) -> int:
    """What the interpreter would exit with, after what it would print."""
    code = 0
    try:
        main()
    except SystemExit as done:
        if isinstance(done.code, int) or done.code is None:
            code = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    return code


class ForkedCli:
    """A server for a test's commands: ``run`` one, or ``run_together`` several at once."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.env = self.environment(env)
        self.lock = threading.Lock()
        self.calls = 0
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forked_cli"],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @staticmethod
    def environment(env: dict[str, str] | None) -> dict[str, str]:
        """The environment run_cli gives its processes: no RUNLEDGER_ variable, and no context
        a `runledger login` on this machine saved (a test that wants one names its folder)."""
        given = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
        return given | {"XDG_CONFIG_HOME": NO_CONFIG} | (env or {}) | {"COLUMNS": "200"}

    def run(
        self, *args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One command; ``env``, as run_cli's, replaces the server's for this command;
        ``input``, what it reads on its standard input (else nothing: /dev/null)."""
        (done,) = self.run_together([args], cwd=cwd, env=env, input=input)
        return done

    def run_together(
        self,
        commands: list[tuple[str, ...]],
        cwd: Path,
        env: dict[str, str] | None = None,
        input: str | None = None,
    ) -> list[subprocess.CompletedProcess[str]]:
        """Several commands at one moment: their processes are let go together."""
        environ = self.env if env is None else self.environment(env)
        with self.lock:
            files: list[tuple[Path, Path]] = []
            for _ in commands:
                self.calls += 1
                files.append((self.folder / f"{self.calls}.out", self.folder / f"{self.calls}.err"))
            given = None
            if input is not None:
                given = self.folder / f"{self.calls}.in"
                given.write_text(input, encoding="utf-8")
            batch = [
                {
                    "args": args,
                    "cwd": str(cwd),
                    "env": environ,
                    "out": str(out),
                    "err": str(err),
                    "in": str(given) if given else None,
                }
                for args, (out, err) in zip(commands, files, strict=True)
            ]
            assert self.server.stdin is not None and self.server.stdout is not None
            self.server.stdin.write(json.dumps(batch) + "\n")
            self.server.stdin.flush()
            answer = self.server.stdout.readline()
        assert answer, f"the CLI server died (exit {self.server.poll()})"
        codes = json.loads(answer)["codes"]
        return [
            subprocess.CompletedProcess(list(args), int(code), self._read(out), self._read(err))
            for args, code, (out, err) in zip(commands, codes, files, strict=True)
        ]

    @staticmethod
    def _read(path: Path) -> str:
        # As run_cli reads a pipe: bytes that are not UTF-8 stay visible to the assertions.
        return path.read_bytes().decode("utf-8", errors="backslashreplace")

    def close(self) -> None:
        if self.server.stdin is not None:
            self.server.stdin.close()
        self.server.wait(timeout=30)
        if self.server.stdout is not None:
            self.server.stdout.close()


if __name__ == "__main__":
    _serve()
