"""How a command reaches the data: a server's HTTP API as the token's person, when one is
configured (RUNLEDGER_SERVER and RUNLEDGER_TOKEN, or the context `runledger login` saved), else
the store directly, an administrator's act. Both doors answer the API's schemas (door.py)."""

from __future__ import annotations

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.doors.contexts import server
from runledger.application.cli.doors.door import Door
from runledger.application.cli.doors.local import Local
from runledger.application.cli.doors.remote import Remote

__all__ = ["Door", "Local", "Remote", "opened", "remote"]


def remote() -> bool:
    """Whether the commands that read or act go through a server."""
    return server() is not None


def opened() -> Door:
    """The door this command goes through, open: a context manager that closes it."""
    found = server()
    return Local(bootstrap()) if found is None else Remote(found)
