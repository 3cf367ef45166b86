"""Which read hook a process gets: on SQLite (one process) it catches the views up itself; on
PostgreSQL it follows the store's one projector (projections/following.py), or is it."""

from __future__ import annotations

from collections.abc import Callable

from runledger.application.errors import StoreUnavailable
from runledger.application.store.ledger_app import LedgerApp, own_connection
from runledger.projections.following import Following
from runledger.projections.fresh_reads import shared
from runledger.projections.projector import Projector
from runledger.projections.role import Role


def read_hook(app: LedgerApp, projector: Projector, wait_s: float) -> Callable[[], int]:
    """``fresh`` for every read: caught up to the store's head as the read began. Reads at
    once share a catch-up begun after they all arrived (``shared``)."""

    # Looked up at each call, so that whatever wraps the projector's catch_up later (a
    # benchmark's meter, a test's injected fault) wraps these catch-ups too.
    def catch_up() -> int:
        return projector.catch_up()

    config = app.config
    if config is None or config.engine != "postgres":
        return shared(catch_up)
    role = Role(lambda: own_connection(config), config.schema or "public")
    following = Following(
        projector,
        role,
        catch_up,
        wait_s=wait_s,
        late=_late(wait_s),
        wanted=app.hearing.wanted,
        projected=app.hearing.projected,
    )
    app.on_close.append(following.close)
    return shared(following.fresh)


def _late(wait_s: float) -> Callable[[int, int], Exception]:
    def late(needed: int, reached: int) -> Exception:
        return StoreUnavailable(
            f"the projections did not reach position {needed} within {wait_s:g} s (they are at "
            f"{reached}): the process that projects this store is behind, stuck, frozen mid-page "
            "or gone; `runledger projections` says which (RUNLEDGER_PROJECTION_WAIT_S sets this "
            "wait)"
        )

    return late
