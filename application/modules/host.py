"""What a module holds of core: its context, made of closures bound to its name.

No attribute of a context or of its ``events`` says whose they are in a way core reads back:
the owner of every entry a module expires or reconciles is the name its closures were built
over, and both objects refuse new attributes, so ``ctx.events._module = "sandbox"`` fails
instead of quietly changing nothing. No plain attribute leads to the registry, the Reconciler or
the ledger application either. Modules are trusted code in core's process: this keeps honest
code from reaching core's objects by accident (or another module's identity by assignment); it
is no wall against ``gc.get_referrers`` or reading a closure's ``__closure__`` cells.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runledger.application.modules.plain import Unreadable, plain
from runledger.application.modules.protocol import ModuleRegistrar, RegistrationError

log = logging.getLogger("runledger.loader")


class _Sealed:
    """Attributes set once, by ``_seal``; any later assignment or deletion is refused."""

    __slots__ = ()

    def _seal(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a module's {type(self).__name__} cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a module's {type(self).__name__} cannot be changed")


class ModuleEvents(_Sealed):
    """What a module may tell core: ``reconcile()`` and ``expired(kind=, ref=)``, both bound to
    the module's name when core builds this object."""

    __slots__ = ("expired", "reconcile")
    reconcile: Callable[[], Any]
    expired: Callable[..., dict[str, int]]

    def __init__(
        self,
        module: str,
        reconcile: Callable[[str], Any],
        expired: Callable[[str, Any, Any], dict[str, int]],
    ) -> None:
        def ask() -> Any:
            """The module saw its own reconnect: ask which of its entries are still in force.

            Answers the summary, or None when core could not reconcile now (it is logged):
            core's trouble never becomes an exception inside the module that asked.
            """
            try:
                return reconcile(module)
            except Exception:
                log.exception("reconcile asked by module %s failed", module)
                return None

        def tell(*, kind: Any, ref: Any) -> dict[str, int]:
            """The world ended one of this module's resources at its deadline."""
            try:
                return expired(module, plain(kind), plain(ref))
            except Unreadable:
                return {"expired": 0}
            except Exception:
                log.exception("expiry reported by module %s failed", module)
                return {"expired": 0}

        self._seal(reconcile=ask, expired=tell)


class Registration:
    """A module's registration while its ``register(ctx)`` runs; closed once it returned (or
    was given up), after which registering is refused inside the module."""

    def __init__(self, registrar: ModuleRegistrar) -> None:
        self._registrar = registrar
        self._lock = threading.Lock()
        self._open = True
        self.closers: list[Callable[[], None]] = []

    def action(self, action_id: str, **kwargs: Any) -> None:
        with self._lock:
            self._check(action_id)
            self._registrar.action(action_id, **kwargs)

    def lease(self, lease_id: str, **kwargs: Any) -> None:
        with self._lock:
            self._check(lease_id)
            self._registrar.lease(lease_id, **kwargs)

    def on_close(self, fn: Callable[[], None]) -> None:
        # Still taken after register() returned: a module may start (and so stop) work later.
        self.closers.append(fn)

    def close(self) -> None:
        """No more actions or leases: what was registered is now read by core."""
        with self._lock:
            self._open = False

    def _check(self, what: str) -> None:
        if not self._open:
            raise RegistrationError(
                f"{what!r} was registered after register() returned; core no longer takes it"
            )


class ModuleContext(_Sealed):
    """Everything a module's ``register(ctx)`` receives: ``action``, ``lease``, ``on_close``,
    ``events``, ``log``, ``settings`` (its own only), and ``name``, ``site``, ``folder`` to show.
    ``name`` is for the module's own messages: core never reads it back to decide an owner."""

    __slots__ = (
        "action",
        "events",
        "folder",
        "lease",
        "log",
        "name",
        "on_close",
        "settings",
        "site",
    )
    name: str
    site: str
    folder: Path
    events: ModuleEvents
    log: logging.Logger
    settings: dict[str, str]
    action: Callable[..., None]
    lease: Callable[..., None]
    on_close: Callable[[Callable[[], None]], None]

    def __init__(
        self,
        *,
        name: str,
        site: str,
        folder: Path,
        events: ModuleEvents,
        settings: dict[str, str],
        registration: Registration,
    ) -> None:
        def action(action_id: str, **kwargs: Any) -> None:
            registration.action(action_id, **kwargs)

        def lease(lease_id: str, **kwargs: Any) -> None:
            registration.lease(lease_id, **kwargs)

        def on_close(fn: Callable[[], None]) -> None:
            registration.on_close(fn)

        self._seal(
            name=name,
            site=site,
            folder=folder,
            events=events,
            log=logging.getLogger(f"runledger.module.{name}"),
            settings=settings,
            action=action,
            lease=lease,
            on_close=on_close,
        )
