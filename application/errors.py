from __future__ import annotations


class RunledgerError(Exception):
    """An error an operator can act on; its message is one clear sentence."""


class ConfigError(RunledgerError):
    """A setting is missing or malformed."""


class StoreUnavailable(RunledgerError):
    """The configured store cannot be reached."""


class NotInitialised(RunledgerError):
    """The store has no runledger tables yet."""


class NotFound(RunledgerError):
    """No such run or entry."""


class BadRequest(RunledgerError):
    """The input was refused; nothing was written."""
