"""The exit codes every command leaves by, in one place, and the words `--help` says them in."""

from __future__ import annotations

OK = 0
"""Done."""
FAILED = 1
"""Refused (the state of things says no), not found, or store trouble: one sentence said."""
USAGE = 2
"""The command line itself is wrong: Typer's own parse errors, and values our checks refuse."""
CLEANUP_INCOMPLETE = 3
"""`cleanup` and `log`: the run's cleanup status is `incomplete` after the command, so a
person is needed (scripts alert on it)."""
INTERRUPTED = 130
"""Ctrl-C."""

_CODES = (
    (OK, "success"),
    (FAILED, "failure: refused, not found, or store trouble (one sentence says which)"),
    (USAGE, "usage: an unknown option, or a value the command line may not carry"),
)
_INCOMPLETE = (CLEANUP_INCOMPLETE, "cleanup incomplete: a run is left needing a person")


def epilog(*, incomplete: bool = False) -> str:
    """A command's exit codes for its --help; ``incomplete`` when it may exit 3."""
    codes = (*_CODES, _INCOMPLETE) if incomplete else _CODES
    return "Exit codes:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in codes)


def every_code() -> str:
    """All the exit codes, for the top-level --help."""
    listed = (*_CODES, (CLEANUP_INCOMPLETE, f"{_INCOMPLETE[1]} (cleanup and log only)"))
    return "Exit codes:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in listed)
