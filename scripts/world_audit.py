"""World audit: a fault drill that ends by holding the world itself against the ledger.

Run it from the project root, with PostgreSQL and Redis up, for example::

    .venv/bin/python -m scripts.world_audit --store postgres --runs 120 --runners 3 \\
        --minutes 4 --kills 40 --freezes 40

It makes a store of its own (a PostgreSQL schema, dropped at the end, or one SQLite file shared
by every runner), a sandbox world in a file of its own and a private Redis prefix, sets a value
of its own on every lease target, and starts ``--runners`` runner processes with the built-in
sandbox and Redis modules (``scripts/drills/world_audit_runner.py``). Over ``--minutes`` it starts
``--runs`` random runs of spawns, zones and leases, kills runners (``--kills`` SIGKILLs, each
restarted at once under a new name), freezes them (``--freezes`` SIGSTOPs, each SIGCONTed a few
seconds later, often after its claims lapsed), and turns the sandbox's fault knobs: calls that
hang past their deadline (some while their run is cancelled or aborted under them), failures,
garbage, exceptions, and stalls of the whole world. People cancel, abort and ask for cleanup
again (``runledger cleanup RUN --by ...``) while other runs hold the same targets, and a game
master changes targets under running leases. Then it settles and reads the world's tables and
keys directly (``scripts/drills/world_audit_check.py``): lost things, lost lease values, repeats
beyond the call in flight and stuck runs must all be 0. It exits 1 when any is not, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from scripts.drills.world_audit_drill import Plan, Result, run_drill

SHOWN = 12  # the findings of each kind printed in full


def parse(argv: list[str] | None = None) -> Plan:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", choices=["postgres", "sqlite"], required=True)
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--runners", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=4.0, help="how long the storm lasts")
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--freezes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle", type=float, default=300.0, help="seconds to settle, at most")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.runners < 2 or args.minutes <= 0 or args.settle <= 0:
        parser.error("--runs must be >= 1, --runners >= 2 (one always works), the times > 0")
    if args.kills < 0 or args.freezes < 0:
        parser.error("--kills and --freezes must be >= 0")
    return Plan(
        store=args.store,
        runs=args.runs,
        runners=args.runners,
        minutes=args.minutes,
        kills=args.kills,
        freezes=args.freezes,
        seed=args.seed,
        settle_s=args.settle,
    )


def report(result: Result, before: str, after: str) -> None:
    plan, tally, ledger, faults = result.plan, result.tally, result.ledger, result.faults
    statuses = [r.status for r in ledger.runs.values()]
    cleanup = [r.cleanup_status for r in ledger.runs.values()]
    logged, after_end = result.late_answers()
    exits = result.exits
    figures = [
        ("store, runners, seed", f"{plan.store}, {plan.runners}, {plan.seed}"),
        ("runs (starts refused, then tried again)", f"{tally.runs} ({len(tally.refused)})"),
        ("  completed / cancelled / aborted / running", _counts(statuses, _RUN)),
        ("  cleanup complete / incomplete / n.r. / pending", _counts(cleanup, _CLEANUP)),
        ("kills / freezes", f"{tally.kills} / {tally.freezes}"),
        ("late answers: calls hung past their deadline", str(faults.late_calls)),
        ("  logged late by the ledger (after their run ended)", f"{logged} ({after_end})"),
        ("faults (stall: the whole world)", _listed(faults.opened)),
        ("people's acts", _listed(tally.acts)),
        ("people's cleanup retries (their exit codes)", f"{result.retries} ({_listed(exits)})"),
        ("  of a run whose lease target another live run held", str(tally.contested)),
        ("game master's changes under a lease", str(result.game_master.changes)),
        ("the drill's reads and writes the store said locked", str(tally.store_waits)),
        ("duration (settling)", f"{result.seconds:.0f}s ({result.settled_s:.0f}s)"),
    ]
    width = 52
    for name, value in figures:
        print(f"{name:<{width}} {value}")
    found = result.findings
    for (name, count), details in zip(
        found.counts().items(),
        [found.lost_things, found.lost_values, found.repeats, found.stuck],
        strict=True,
    ):
        print(f"{name:<{width}} {count}{'' if not count else '  <-- should be 0'}")
        for detail in details[:SHOWN]:
            print(f"  - {detail}")
        if len(details) > SHOWN:
            print(f"  - ... and {len(details) - SHOWN} more")
    for death in result.died:
        print(f"runner trouble: {death}")
    print(f"before: {before}\nafter:  {after}\nlogs:   {result.folder}", flush=True)


_RUN = ("completed", "cancelled", "aborted", "running")
_CLEANUP = ("complete", "incomplete", "not_required", "pending")


def _listed(counts: Mapping[Any, int]) -> str:
    return ", ".join(f"{what} {n}" for what, n in sorted(counts.items(), key=str)) or "none"


def _counts(values: Sequence[str], order: tuple[str, ...]) -> str:
    return " / ".join(str(values.count(v)) for v in order)


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{n:.2f}" for n in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    plan = parse(argv)
    before = uptime()
    print(
        f"world audit: {plan.store}, {plan.runs} runs, {plan.runners} runners, "
        f"{plan.minutes:g} min, {plan.kills} kills, {plan.freezes} freezes, seed {plan.seed}",
        flush=True,
    )
    result = run_drill(plan)
    report(result, before, uptime())
    return 1 if any(result.findings.counts().values()) else 0


if __name__ == "__main__":
    sys.exit(main())
