"""What a request to either HTTP front end (the API, the console) is given: the composition
root. Requests write at once, as other processes do: no service keeps one call's state on
itself, and the store refuses a stale save (a 409, api/errors.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from runledger.application.runledger import Runledger


def get_rl(request: Request) -> Runledger:
    rl: Runledger = request.app.state.rl
    return rl


Rl = Annotated[Runledger, Depends(get_rl)]
