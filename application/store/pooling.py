"""The PostgreSQL pool hands out the connection returned last.

psycopg_pool keeps its idle connections in a deque, takes from the left and gives back to the
right: each connection in turn. One thread's statements then each met a connection it had left
several statements before, so what a connection keeps warm for the next statement was rarely
there: psycopg prepares a statement at its fifth use on a connection, PostgreSQL plans a prepared
one generically after five more, and the catalog caches are per connection. Handing out the
connection given back last keeps a thread on one connection; the others wait idle until threads
want them at once. A burst-shaped sweep runs faster this way (scripts/MEASUREMENTS.md, "LIFO
pool").

The deque is the pool's own attribute: if a psycopg_pool release changes it, the pool is left as
it is, and tests/application/test_pool.py fails until this is looked at again.
"""

from __future__ import annotations

from collections import deque
from typing import Any


class LastInFirstOut(deque[Any]):
    """The pool's idle connections, the one given back last taken first."""

    def popleft(self) -> Any:
        return self.pop()


def last_in_first_out(pool: Any) -> bool:
    """Make ``pool`` hand out the connection given back last; False if it cannot be done."""
    lock, idle = getattr(pool, "_lock", None), getattr(pool, "_pool", None)
    if lock is None or type(idle) is not deque:
        return False
    with lock:
        pool._pool = LastInFirstOut(pool._pool)
    return True
