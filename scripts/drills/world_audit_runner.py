"""A runner with the built-in modules, in a process of its own, for the world-audit drill.

Run as ``python -m scripts.drills.world_audit_runner --worker NAME [--budget-ms N]
[--claim-slack-s S]`` from the project root. Everything else comes from the environment as for
``runledger runner`` (the store's URL, ``RUNLEDGER_BUILTIN_MODULES``, the modules' own settings,
retry delays): the two knobs here are settings no environment variable reaches, the bound on
core's own lease apply and the slack a claim is given after its call's budget, which the drill
keeps short so that a frozen runner's claims lapse while it is stopped.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence

from runledger.application.bootstrap import bootstrap
from runledger.application.settings import Settings


def settings_for(args: argparse.Namespace) -> Settings:
    given = {"default_budget_ms": args.budget_ms, "claim_slack_s": args.claim_slack_s}
    return Settings.from_env().model_copy(update=given)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts.drills.world_audit_runner")
    parser.add_argument("--worker", required=True)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--budget-ms", type=int, default=2000, help="core.lease's apply bound")
    parser.add_argument("--claim-slack-s", type=float, default=0.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` shows where a runner is stuck
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    started = time.monotonic()
    with bootstrap(settings_for(args)) as rl:
        ticks = rl.runner(args.worker).run(args.interval, stop)
    seconds = round(time.monotonic() - started, 3)
    print(json.dumps({"worker": args.worker, "ticks": ticks, "seconds": seconds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
