"""Entries given back per second through the Redis module beside the sandbox module, with the
same runs: the round-trip cost of a real server.

    .venv/bin/python -m scripts.bench_modules --runs 40 --entries 50

A script, not a test: a fresh SQLite store and sandbox file under /tmp, Redis keys under a
unique prefix, all removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import redis

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.settings import Settings


def give_back(module: str, runs: int, entries: int, folder: Path, prefix: str) -> float:
    url = f"sqlite:///{folder / f'{module}.sqlite3'}"
    settings = Settings(
        database_url=url,
        builtin_modules="sandbox,redis",
        cleanup_run_batch=runs,
        module_settings={
            "RUNLEDGER_SANDBOX_PATH": str(folder / "world.sqlite3"),
            "RUNLEDGER_REDIS_PREFIX": prefix,
        },
    )
    init_store(settings)
    with bootstrap(settings) as rl:
        steps = [
            {"id": f"spawn-{i}", "action": f"{module}.spawn", "params": {"count": 25}}
            for i in range(entries // 25)
        ]
        spec = {"name": "bench", "phases": [{"id": "p", "advance": "manual", "steps": steps}]}
        ids = [rl.runs.start(spec) for _ in range(runs)]
        while rl.runs.advance_leg("bench").dispatched:
            pass
        for run_id in ids:
            rl.runs.advance(run_id, "bench")  # the manual phase's steps are done: it completes
        started = time.perf_counter()
        while rl.cleanup.sweep("bench"):
            pass
        seconds = time.perf_counter() - started
        statuses = {r.cleanup_status for r in rl.queries.runs(ids, rl.clock(), 3)}
        assert statuses == {"complete"}, statuses
    return runs * entries / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--entries", type=int, default=50, help="per run, in steps of 25")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rl-modules-"))
    prefix = f"rlbench{uuid.uuid4().hex[:8]}:"
    try:
        sandbox = give_back("sandbox", args.runs, args.entries, folder, prefix)
        real = give_back("redis", args.runs, args.entries, folder, prefix)
    finally:
        client = redis.Redis()
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
        shutil.rmtree(folder)
    total = args.runs * args.entries
    print(f"{total:,} entries in groups of 25, SQLite ledger")
    print(f"  sandbox module {sandbox:>9,.0f} entries/s")
    print(f"  redis module   {real:>9,.0f} entries/s  (redis/sandbox = {real / sandbox:.2f})")


if __name__ == "__main__":
    main()
