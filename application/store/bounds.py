"""Every wait for PostgreSQL has a bound, so a store that is cut or black-holed (packets dropped,
nothing closed) is a prompt refusal, never a hang:

- connecting: libpq's connect_timeout, POSTGRES_CONNECT_TIMEOUT seconds (libpq's least is 2);
- a connection from the pool: the pool's timeout, the same seconds. Past it the pool raises
  StoreUnavailable, not psycopg's PoolTimeout: the library tries a call ten times on psycopg's
  operational errors, and ten full waits are no bound;
- a round trip: the server's statement_timeout (RUNLEDGER_STORE_TIMEOUT_S), and the client's own
  bound a little later for a connection whose packets go nowhere, where no server is left to
  cancel anything: the connection is closed and the call is StoreUnavailable;
- a peer gone under an idle connection: TCP keepalives; a write never acknowledged:
  tcp_user_timeout.

The URL's own libpq parameters (sslmode=..., application_name=...) go to every connection and
win over these; its options= (and PGOPTIONS) follow ours, so their own -c settings win too
(ours also turn the server's JIT off: -c jit=on in options= turns it back on).

While an outage is on, the pool tries each connection before handing it out: the ones the
outage broke are then replaced, rather than failing the first requests after the mend.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import psycopg
from eventsourcing.postgres import ConnectionPool, PostgresDatastore
from psycopg.abc import PQGen
from psycopg_pool import PoolTimeout

from runledger.application.errors import StoreUnavailable
from runledger.application.store.outage import Outage
from runledger.application.store.url import StoreConfig

# The client's bound comes this long after the server's, so that a statement the server is
# still there to cancel says so itself ("canceling statement due to statement timeout").
CLIENT_SLACK_S = 2.0


def libpq_params(config: StoreConfig) -> dict[str, Any]:
    """What every connection to ``config``'s server is opened with, beside host and user."""
    bound = config.timeout_s
    given = dict(config.libpq)
    ours: dict[str, Any] = {
        "connect_timeout": max(int(config.env["POSTGRES_CONNECT_TIMEOUT"]), 2),
        "keepalives": 1,
        "keepalives_idle": max(math.ceil(bound / 2), 1) if bound else 30,
        "keepalives_interval": max(math.ceil(bound / 6), 1) if bound else 10,
        "keepalives_count": 3,
    }
    # An options= given to libpq hides its PGOPTIONS, so that is passed on too: ours first,
    # then the environment's, then the URL's, and the last -c of a name wins.
    # No JIT: the statements are short reads whose estimates (a subquery per row) can pass
    # jit_above_cost, and compiling one took longer than running it (scripts/MEASUREMENTS.md,
    # "No JIT for runledger's statements").
    options = ["-c jit=off", os.environ.get("PGOPTIONS", ""), given.pop("options", "")]
    if bound:
        ours["tcp_user_timeout"] = int(bound * 1000)
        options.insert(0, f"-c statement_timeout={int(bound * 1000)}")
    ours["options"] = " ".join(o for o in options if o)
    return {**ours, **given}


class BoundedConnection(psycopg.Connection[Any]):
    """A connection whose every round trip ends within ``wait_s``, answered or not."""

    wait_s: float | None = None
    display = "store"
    lost_why: str | None = None

    def wait(self, gen: PQGen[Any], interval: float = 0.1, timeout: float | None = None) -> Any:
        bound = self.wait_s
        if timeout is not None or bound is None:
            return super().wait(gen, interval, timeout)
        started = time.monotonic()
        try:
            return super().wait(gen, interval, bound)
        except psycopg.OperationalError:
            if time.monotonic() - started < bound:
                raise  # the server's own answer, or a connection that broke
        # No answer at all: what the server did with the statement is unknown, so the
        # connection is no use to anyone again, and the pool replaces it.
        self.lost_why = f"no answer within {bound:g} s"
        self.pgconn.finish()
        raise StoreUnavailable(f"cannot reach the {self.display}: no answer within {bound:g} s")


class BoundedPool(ConnectionPool[Any]):
    """The library's pool, bounded (see above), telling ``outage`` what its connections met."""

    def __init__(self, *, outage: Outage, display: str, **kwargs: Any) -> None:
        self.outage = outage
        self.display = display
        super().__init__(**kwargs)

    def getconn(self, timeout: float | None = None) -> Any:
        try:
            return super().getconn(timeout)
        except PoolTimeout:
            waited = self.timeout if timeout is None else timeout
            self.outage.lost(f"no connection within {waited:g} s")
            raise StoreUnavailable(
                f"cannot reach the {self.display}: no connection within {waited:g} s"
            ) from None

    def putconn(self, conn: Any) -> None:
        if conn.broken or conn.closed:
            self.outage.lost(conn.lost_why or "a connection broke")
        else:
            self.outage.answered()
        super().putconn(conn)


def bind(datastore: PostgresDatastore, config: StoreConfig) -> Outage:
    """Give ``datastore`` a bounded pool in place of the library's, before it is ever opened."""
    library = datastore.pool
    given = library.kwargs if isinstance(library.kwargs, dict) else {}  # 9.5 passes a dict
    outage = Outage(config.display)
    after_connect = datastore.after_connect_func()
    wait_s = config.timeout_s + CLIENT_SLACK_S if config.timeout_s else None
    pre_ping = datastore.pre_ping

    def configure(conn: Any) -> None:
        conn.wait_s, conn.display = wait_s, config.display
        after_connect(conn)

    def check(conn: Any) -> None:
        if pre_ping or outage.on:
            ConnectionPool.check_connection(conn)

    datastore.pool = BoundedPool(
        outage=outage,
        display=config.display,
        get_password_func=library.get_password_func,
        connection_class=BoundedConnection,
        kwargs={**given, **libpq_params(config)},
        # One connection opened at start, more as threads ask for them (up to the library's
        # size and overflow): a command or a test that used one had opened five, each costing
        # the server CPU to start and fill its catalog cache (scripts/MEASUREMENTS.md, "One
        # connection at start, the catalog read by name").
        min_size=1,
        max_size=library.max_size,
        open=False,
        configure=configure,
        check=check,
        timeout=library.timeout,
        max_waiting=library.max_waiting,
        max_lifetime=library.max_lifetime,
    )
    return outage
