"""The game as a worker process: run as ``python -m tests.support.game race ...`` from the
project root, it races another for lease targets through core.lease (see ``race``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.support.playing import GAME
from tests.support.world import CLEAR, LEASE


def race(
    url: str, run_id: str, targets: Sequence[str], applied: Path, ready: Path, go: Path
) -> list[dict[str, Any]]:
    """Bootstrap, say ready, wait for go, then ask core.lease for every target in turn for one
    run; answers what each ask answered. Every apply is one line in ``applied``."""

    def apply(target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        fd = os.open(applied, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps({"target": target, "run": run_id}) + "\n").encode())
        finally:
            os.close(fd)
        return {"ok": True, "baseline": CLEAR, "applied": value}

    registry = Registry()
    registry.module(GAME).lease(LEASE, apply=apply, restore=lambda **_: {"ok": True})
    with bootstrap(Settings(database_url=url), registry) as rl:
        lease = rl.runs.core_lease
        ready.touch()
        _await(go)
        return [
            {
                "target": target,
                **lease.perform(
                    {"lease": LEASE, "target": target, "value": run_id, "duration_s": 600},
                    idempotency_key=f"{run_id}:{target}",
                    run_id=run_id,
                ),
            }
            for target in targets
        ]


def _await(go: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the parent never said go")
        time.sleep(0.001)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests.support.game")
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("race")
    for option in ("--url", "--run", "--ready", "--go", "--applied", "--targets"):
        command.add_argument(option, required=True)
    args = parser.parse_args(argv)
    found = race(
        args.url,
        str(UUID(args.run)),
        args.targets.split(","),
        Path(args.applied),
        Path(args.ready),
        Path(args.go),
    )
    print(json.dumps(found, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
