"""Where a runner benchmark's time goes, measured beside it: CPU of processes by /proc, the
PostgreSQL sessions of the runners by sampling ``pg_stat_activity``, and the runners' own tick
lines (``scripts/drills/runner_proc.py --ticks``).

Runner processes name their sessions with ``PGAPPNAME`` (libpq reads it), so the sampler sees
only theirs. The server's CPU is its backends' (``/proc/<pid>/stat`` of each backend pid seen,
last reading kept): the store and the benchmark share the machine.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of one process so far, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine so far, from /proc/stat."""
    parts = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return float(sum(parts) - idle), float(sum(parts))


@dataclass
class Sessions:
    """Samples of the runners' sessions: what each was doing, and the backends' CPU."""

    admin: str
    app_prefix: str
    every_s: float = 0.05
    states: Counter[str] = field(default_factory=Counter)
    samples: int = 0
    backend_cpu: dict[int, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        query = (
            "SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity "
            "WHERE application_name LIKE %s AND pid <> pg_backend_pid()"
        )
        with psycopg.connect(self.admin, autocommit=True) as conn:
            while not self._stop.is_set():
                rows = conn.execute(query, (self.app_prefix + "%",)).fetchall()
                self.samples += 1
                for pid, state, wait_type, wait in rows:
                    self.states[_what(state, wait_type, wait)] += 1
                    seconds = cpu_seconds(pid)
                    if seconds is not None:
                        self.backend_cpu[pid] = seconds
                self._stop.wait(self.every_s)

    def shares(self) -> dict[str, float]:
        """Per state, the mean number of runner sessions in it (over the samples)."""
        return {k: v / max(self.samples, 1) for k, v in self.states.most_common()}

    def server_cpu_s(self) -> float:
        return sum(self.backend_cpu.values())


def _what(state: str | None, wait_type: str | None, wait: str | None) -> str:
    if state == "active" and wait_type:
        return f"active waiting {wait_type}:{wait}"
    if state == "active":
        return "active on CPU"
    if state == "idle in transaction" and wait_type == "Client":
        return "idle in transaction"  # the client is thinking while holding a transaction
    return state or "unknown"


@dataclass
class TickSums:
    ticks: int = 0
    advance_s: float = 0.0
    cleanup_s: float = 0.0
    given_back: int = 0
    completed: int = 0
    dispatched: int = 0
    worst_tick_s: float = 0.0


def tick_sums(path: Path) -> dict[str, TickSums]:
    """Per worker: its ticks, the seconds in each leg, and the work they did."""
    sums: dict[str, TickSums] = {}
    if not path.exists():
        return sums
    for text in path.read_text().splitlines():
        line: dict[str, Any] = json.loads(text)
        s = sums.setdefault(str(line["worker"]), TickSums())
        s.ticks += 1
        s.advance_s += float(line["advance_s"])
        s.cleanup_s += float(line["cleanup_s"])
        s.given_back += int(line["given_back"])
        s.completed += int(line["completed"])
        s.dispatched += int(line["dispatched"])
        s.worst_tick_s = max(s.worst_tick_s, float(line["advance_s"]) + float(line["cleanup_s"]))
    return sums
