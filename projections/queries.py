"""Reads over the projections, each of them fresh: whatever was saved before a read, in this
process or another, is in its answer."""

from __future__ import annotations

from runledger.projections.entry_reads import EntryReads
from runledger.projections.log_reads import LogReads
from runledger.projections.rows import EntryRow, LogLine, RunRow
from runledger.projections.run_reads import RunReads

__all__ = ["EntryRow", "LogLine", "Queries", "RunRow"]


class Queries(RunReads, EntryReads, LogReads):
    """Reads over the projections. Every answer is a function of the projected rows.

    Split by what is read (runs, entries, a run's log); each read catches the views up first,
    or shares the one catch-up of ``one_catch_up`` (projections/fresh_reads.py).
    """
