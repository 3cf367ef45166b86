"""How long `verify` takes for a 200-step definition, beside parsing the same spec alone.

The spec has 180 sandbox.spawn steps (a params model and a check each), 10 sandbox.zone steps
(their check reads the world's file) and 10 core.lease steps on distinct targets (each looks up
its target's reservation in the store), in 10 phases. Each verify records one dry run.

    python -m scripts.bench_dry_run [--url postgresql://...?schema=s] [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.services.spec_input import parse_spec
from runledger.application.settings import Settings


def step(index: int) -> dict[str, Any]:
    if index % 20 == 10:
        return {
            "id": f"lease-{index}",
            "action": "core.lease",
            "params": {
                "lease": "sandbox.weather",
                "target": f"t{index}",
                "value": "fog",
                "duration_s": 600,
            },
        }
    if index % 20 == 5:
        return {"id": f"zone-{index}", "action": "sandbox.zone", "params": {"name": f"z{index}"}}
    return {"id": f"s{index}", "action": "sandbox.spawn", "params": {"kind": "crow", "count": 2}}


def spec(steps: int = 200, phases: int = 10) -> dict[str, Any]:
    per = steps // phases
    return {
        "name": "bench",
        "phases": [
            {"id": f"p{p}", "steps": [step(p * per + s) for s in range(per)], "after_s": 60}
            for p in range(phases)
        ],
    }


def timed(fn: Any, rounds: int) -> list[float]:
    found = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        found.append((time.perf_counter() - started) * 1000)
    return found


def report(what: str, ms: list[float]) -> None:
    ordered = sorted(ms)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    print(f"{what:<44} median {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a store URL (default: a fresh SQLite file)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["RUNLEDGER_SANDBOX_PATH"] = str(Path(folder) / "sandbox.sqlite3")
        url = args.url or f"sqlite:///{Path(folder) / 'ledger.sqlite3'}"
        settings = Settings(database_url=url)
        init_store(settings)
        document = spec()
        with bootstrap(settings) as rl:
            name = f"bench-{time.time_ns()}"
            rl.definitions.create(name, document, "bench")
            rl.definitions.verify(name, "bench")  # warm: imports, connections
            dry = rl.definitions.verify(name, "bench")
            assert dry.passed, dry.problems
            steps = sum(len(p["steps"]) for p in document["phases"])
            print(f"store: {url.split('?')[0]}; {steps} steps; {args.rounds} rounds each")
            report(
                "baseline: parse and validate the spec",
                timed(lambda: parse_spec(document), args.rounds),
            )
            report(
                "verify (dry run, recorded)",
                timed(lambda: rl.definitions.verify(name, "bench"), args.rounds),
            )


if __name__ == "__main__":
    main()
