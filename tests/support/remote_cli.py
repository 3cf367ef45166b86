"""The CLI through a server, for tests: the API served in this process (uvicorn in a thread, on a
spare port) over the test's store, a token per person asked for, and a command's arguments as
they are said through a server (no --by: the token names the person).

A test of the CLI runs once on the store directly and once through such a server, with the same
arguments and the same expectations: what a command prints is the same either way."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence

import uvicorn

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap
from runledger.application.cli.keyed import terminal_person
from runledger.application.services.inputs import MAX_NAME
from runledger.application.settings import Settings
from runledger.domain.values import text_problem

START_S = 30.0
CAST = ("alice", "ann", "bea", "bob", "ops", "paul", "rita", "sam")
"""The people the CLI's tests name with --by: their tokens are issued as the server starts, so
that a test counting what a refused command wrote counts no token issued for it."""


class Served:
    """The API over one store, served in a thread until ``close``."""

    def __init__(self, settings: Settings) -> None:
        self.rl = bootstrap(settings)
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", 0))
        listening.listen(128)
        self.url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        config = uvicorn.Config(create_app(self.rl), log_config=None, access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [listening]}, daemon=True
        )
        self.thread.start()
        self._wait()
        self.secrets: dict[tuple[str, str], str] = {}
        for person in (terminal_person(), *CAST):
            self.token(person)

    def _wait(self) -> None:
        deadline = time.monotonic() + START_S
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the API did not start"
            time.sleep(0.01)

    def token(self, person: str, role: str = "admin") -> str:
        """A token for ``person``, issued once (an admin's by default: every command may run)."""
        if (person, role) not in self.secrets:
            issued = self.rl.tokens.issue(person, role, by="tests")
            self.secrets[person, role] = issued.secret
        return self.secrets[person, role]

    def env(self, person: str, role: str = "admin") -> dict[str, str]:
        return {"RUNLEDGER_SERVER": self.url, "RUNLEDGER_TOKEN": self.token(person, role)}

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.rl.close()


def without_by(args: Sequence[str]) -> tuple[list[str], str]:
    """The arguments as said through a server, and the person: --by's (the token then names
    them), or the shell's as the store directly names whoever gives no --by. A --by the store
    directly would refuse stays, to be refused through the server too."""
    said, person, index = [], terminal_person(), 0
    while index < len(args):
        arg = args[index]
        named = args[index + 1] if arg == "--by" and index + 1 < len(args) else None
        if arg.startswith("--by="):
            named = arg.removeprefix("--by=")
        if named is not None and _a_person(named):
            person = named
            index += 1 if arg.startswith("--by=") else 2
            continue
        said.append(arg)
        index += 1
    return said, person


def _a_person(name: str) -> bool:
    return bool(name.strip()) and len(name) <= MAX_NAME and text_problem(name) is None
