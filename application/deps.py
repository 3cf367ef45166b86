"""What a request to either HTTP front end (the API, the console) is given: the composition
root, and the process's write turn."""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import Depends, Request

from runledger.application.runledger import Runledger


def get_rl(request: Request) -> Runledger:
    rl: Runledger = request.app.state.rl
    return rl


def get_writes(request: Request) -> threading.Lock:
    """One write at a time per process: the services keep per-call state (what the live
    runners serve, a sweep's place) on themselves."""
    lock: threading.Lock = request.app.state.writes
    return lock


Rl = Annotated[Runledger, Depends(get_rl)]
Writes = Annotated[threading.Lock, Depends(get_writes)]
