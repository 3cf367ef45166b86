from __future__ import annotations

import os
from collections.abc import Mapping
from ipaddress import IPv4Network, IPv6Network, ip_network

from pydantic import BaseModel, Field, ValidationError, field_validator

from runledger.application.errors import ConfigError
from runledger.domain.backoff import Backoff
from runledger.domain.text import safe_text
from runledger.domain.values import plain_message

DEFAULT_DATABASE_URL = "sqlite:///./runledger.sqlite3"
MAX_CLEANUP_LANES = 8

ENV_NAMES = {
    "database_url": "RUNLEDGER_DATABASE_URL",
    "max_revert_attempts": "RUNLEDGER_REVERT_MAX_ATTEMPTS",
    "cleanup_run_batch": "RUNLEDGER_CLEANUP_RUN_BATCH",
    "cleanup_groups_per_run": "RUNLEDGER_CLEANUP_GROUPS_PER_RUN",
    "cleanup_budget_s": "RUNLEDGER_CLEANUP_BUDGET_S",
    "cleanup_lanes": "RUNLEDGER_CLEANUP_LANES",
    "wake_s": "RUNLEDGER_WAKE_S",
    "advance_run_batch": "RUNLEDGER_RUN_BATCH",
    "steps_per_run_tick": "RUNLEDGER_STEPS_PER_RUN_TICK",
    "steps_per_tick": "RUNLEDGER_STEPS_PER_TICK",
    "lease_max_s": "RUNLEDGER_LEASE_MAX_S",
    "retry_delays_s": "RUNLEDGER_RETRY_DELAYS_S",
    "retry_jitter": "RUNLEDGER_RETRY_JITTER",
    "runner_gone_s": "RUNLEDGER_RUNNER_GONE_S",
    "shutdown_grace_s": "RUNLEDGER_SHUTDOWN_GRACE_S",
    "webhook_attempts": "RUNLEDGER_WEBHOOK_ATTEMPTS",
    "webhook_delay_s": "RUNLEDGER_WEBHOOK_DELAY_S",
    "webhook_allow_networks": "RUNLEDGER_WEBHOOK_ALLOW_NETWORKS",
    "ready_lag": "RUNLEDGER_READY_LAG",
    "projection_wait_s": "RUNLEDGER_PROJECTION_WAIT_S",
    "modules_dir": "RUNLEDGER_MODULES_DIR",
    "builtin_modules": "RUNLEDGER_BUILTIN_MODULES",
    "module_load_budget_s": "RUNLEDGER_MODULE_LOAD_BUDGET_S",
    "connect_timeout_s": "RUNLEDGER_CONNECT_TIMEOUT_S",
    "store_timeout_s": "RUNLEDGER_STORE_TIMEOUT_S",
    "session_hours": "RUNLEDGER_SESSION_HOURS",
    "session_secret": "RUNLEDGER_SESSION_SECRET",
    "failed_auth_per_minute": "RUNLEDGER_FAILED_AUTH_PER_MINUTE",
    "trusted_proxies": "RUNLEDGER_TRUSTED_PROXIES",
    "cookie_secure": "RUNLEDGER_COOKIE_SECURE",
}
# The names these settings had before every one was RUNLEDGER_*: still read, so an environment
# written for an earlier runledger keeps its meaning. Both names set to different values is
# refused (Settings.from_env): which one was meant cannot be known.
ALIASES = {
    "max_revert_attempts": "EVENT_REVERT_MAX_ATTEMPTS",
    "cleanup_run_batch": "EVENT_CLEANUP_RUN_BATCH",
    "cleanup_groups_per_run": "EVENT_CLEANUP_GROUPS_PER_RUN",
    "cleanup_budget_s": "EVENT_CLEANUP_BUDGET_S",
    "cleanup_lanes": "EVENT_CLEANUP_LANES",
    "wake_s": "EVENT_WAKE_S",
    "advance_run_batch": "EVENT_RUN_BATCH",
    "steps_per_run_tick": "EVENT_STEPS_PER_RUN_TICK",
    "steps_per_tick": "EVENT_STEPS_PER_TICK",
    "lease_max_s": "EVENT_LEASE_MAX_S",
    "retry_delays_s": "EVENT_RETRY_DELAYS_S",
    "retry_jitter": "EVENT_RETRY_JITTER",
    "runner_gone_s": "EVENT_RUNNER_GONE_S",
    "shutdown_grace_s": "EVENT_SHUTDOWN_GRACE_S",
    "connect_timeout_s": "POSTGRES_CONNECT_TIMEOUT",
}
# Core's own names, old and new: no module is given them, whatever its name or manifest says.
CORE_SETTINGS = frozenset(ENV_NAMES.values()) | frozenset(ALIASES.values())
LEDGER_CREDENTIALS = frozenset({"RUNLEDGER_DATABASE_URL", "PERSISTENCE_MODULE"})
LEDGER_PREFIXES = ("POSTGRES_", "SQLITE_")


class Settings(BaseModel, frozen=True):
    """Every setting in one place, read from the environment at the composition root."""

    # default= by keyword: type checkers see a Field's default only there (dataclass_transform),
    # so Settings(database_url=...) type-checks without naming every other field.
    database_url: str = DEFAULT_DATABASE_URL
    max_revert_attempts: int = Field(default=3, ge=1)
    cleanup_run_batch: int = Field(default=10, ge=1)
    cleanup_groups_per_run: int = Field(default=25, ge=1)
    # The cleanup leg sweeps pass after pass (each EVENT_CLEANUP_RUN_BATCH runs) until nothing
    # is left or this is spent; a runner whose leg was cut short ticks again at once.
    cleanup_budget_s: float = Field(default=1.0, gt=0, le=600, allow_inf_nan=False)
    # A pass's runs are divided between this many lanes, worked at once (services/sweep/lanes.py);
    # 0: two on PostgreSQL, one on SQLite.
    cleanup_lanes: int = Field(default=0, ge=0, le=MAX_CLEANUP_LANES)
    # How often a runner at rest looks for runs that ended elsewhere, to give them back then.
    wake_s: float = Field(default=0.05, ge=0.01, le=60, allow_inf_nan=False)
    advance_run_batch: int = Field(default=50, ge=1)
    steps_per_run_tick: int = Field(default=20, ge=1)
    steps_per_tick: int = Field(default=50, ge=1)
    lease_max_s: int = Field(default=86_400, ge=1)
    runner_gone_s: int = Field(default=60, ge=1)
    # A stopping runner waits this long for calls abandoned at their deadline: their answers,
    # when they come, are still ledgered (dispatch.py), then it names those it left.
    shutdown_grace_s: float = Field(default=10.0, ge=0, le=600, allow_inf_nan=False)
    # A webhook is tried this many times, the n-th retry after delay * 2**(n-1) seconds (jittered).
    webhook_attempts: int = Field(default=8, ge=1, le=50)
    webhook_delay_s: float = Field(default=10.0, ge=0, le=3600, allow_inf_nan=False)
    # Networks a webhook may be sent into although they are loopback, private, link-local, …
    # (services/webhooks_addresses.py); none by default.
    webhook_allow_networks: tuple[IPv4Network | IPv6Network, ...] = ()
    # /readyz: events a projection may be behind before the process says it is not ready.
    ready_lag: int = Field(default=10_000, ge=0)
    # PostgreSQL: how long a read in a process that is not the projector waits for the views to
    # pass the store's head (its own writes); past it, the read is the store's trouble (503).
    projection_wait_s: float = Field(default=5.0, gt=0, le=600, allow_inf_nan=False)
    default_budget_ms: int = Field(default=10_000, ge=1)
    # A claim covers one call: its budget, plus this much for saving the verdict after it.
    claim_slack_s: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    retry_delays_s: tuple[float, ...] = (5.0, 30.0, 120.0)
    retry_jitter: float = Field(default=0.2, ge=0, le=1, allow_inf_nan=False)
    modules_dir: str | None = None
    builtin_modules: str = "sandbox"
    # How long a module's import, and then its register(), may take before it is stopped.
    module_load_budget_s: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)
    # How long a call waits for a PostgreSQL connection before the store counts as away: the
    # library's own POSTGRES_CONNECT_TIMEOUT, in whole seconds.
    connect_timeout_s: int = Field(default=5, ge=1, le=600)
    # The longest one round trip to PostgreSQL may take, said to the server (statement_timeout)
    # and kept by the client too (a black-holed connection answers nothing); 0: no bound.
    store_timeout_s: float = Field(default=10.0, ge=0, le=3_600, allow_inf_nan=False)
    session_hours: float = Field(default=8.0, gt=0, le=24 * 30, allow_inf_nan=False)
    # Signs the console's session cookies. Unset: a new secret per process, so a restart signs
    # everyone out and two `serve` processes behind one address need the same value set.
    session_secret: str | None = Field(default=None, repr=False, exclude=True, min_length=16)
    # Wrong sign-ins and bearer tokens from one client address in a minute before it is braked
    # (429) for the rest of that minute (application/brake.py).
    failed_auth_per_minute: int = Field(default=20, ge=1, le=100_000)
    # Proxies (addresses or networks) whose X-Forwarded-For and X-Forwarded-Proto are believed.
    trusted_proxies: tuple[str, ...] = ()
    # The session cookie is Secure on every answer, not only on those to a request over https.
    cookie_secure: bool = False
    module_settings: dict[str, str] = Field(default_factory=dict)
    """``RUNLEDGER_*`` settings for modules; each module is given only its own (module_scope)."""
    module_environ: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)
    """The environment, without the ledger's settings: where a module's manifest-declared
    names outside ``RUNLEDGER_*`` are looked up."""

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        """``"10.0.0.1, 10.1.0.0/16"`` from the environment; each an IP address or network."""
        if isinstance(value, str):
            value = tuple(part.strip() for part in value.split(",") if part.strip())
        for entry in value if isinstance(value, tuple | list) else ():
            try:
                ip_network(str(entry), strict=False)
            except ValueError:
                shown = safe_text(repr(entry), 60)
                raise ValueError(f"{shown} is not an IP address or network") from None
        return value

    @field_validator("webhook_allow_networks", mode="before")
    @classmethod
    def _allowed(cls, value: object) -> object:
        """``"10.0.0.0/8, 127.0.0.1/32"`` from the environment; each a network, host bits zero."""
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple):
            return value
        try:
            return tuple(ip_network(str(entry)) for entry in value)
        except ValueError as error:
            raise ValueError(
                f"must be networks such as 10.0.0.0/8: {safe_text(error, 120)}"
            ) from None

    @field_validator("retry_delays_s", mode="before")
    @classmethod
    def _delays(cls, value: object) -> object:
        """``"5,30,120"`` from the environment; each delay a finite number of seconds >= 0."""
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple):
            return value
        try:
            delays = tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError("must be seconds separated by commas, e.g. 5,30,120") from None
        if not delays or any(not 0 <= d <= 86_400 for d in delays):
            raise ValueError("each delay must be between 0 and 86400 seconds")
        return delays

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.retry_delays_s, self.retry_jitter)

    def builtin_names(self) -> list[str]:
        return [name.strip() for name in self.builtin_modules.split(",") if name.strip()]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        environ = os.environ if environ is None else environ
        named = {field: _named(field, environ) for field in ENV_NAMES}
        given: dict[str, object] = {f: environ[n] for f, n in named.items() if n is not None}
        given["module_settings"] = {k: v for k, v in environ.items() if k.startswith("RUNLEDGER_")}
        given["module_environ"] = {
            k: v
            for k, v in environ.items()
            if not k.startswith("RUNLEDGER_") and refused_setting("", k) is None
        }
        try:
            return cls.model_validate(given)
        except ValidationError as error:
            first = error.errors()[0]
            field = str(first["loc"][0])
            name = named.get(field) or ENV_NAMES.get(field, field)
            raise ConfigError(f"{name} is invalid: it {plain_message(first)}") from None


def _named(field: str, environ: Mapping[str, str]) -> str | None:
    """The variable ``field`` is read from: its RUNLEDGER_ name, else its old name; None when
    neither is set. Both set to different values is refused in one sentence."""
    name, alias = ENV_NAMES[field], ALIASES.get(field)
    if not alias or not environ.get(alias):
        return name if environ.get(name) else None
    if environ.get(name) and environ[name] != environ[alias]:
        raise ConfigError(
            f"{name} and {alias} are both set, to different values: {alias} is the old name "
            f"of {name}; set only {name}"
        )
    return name if environ.get(name) else alias


def settings_prefix(module: str) -> str:
    """Every setting named with this prefix is the module's own."""
    return f"RUNLEDGER_{module.upper().replace('-', '_')}_"


def refused_setting(module: str, name: str) -> str | None:
    """Why ``module``'s manifest may not declare the setting ``name``; None when it may."""
    upper = name.upper()
    if upper in LEDGER_CREDENTIALS or upper.startswith(LEDGER_PREFIXES):
        return f"{name} is the ledger's own setting"
    if upper in CORE_SETTINGS:
        return f"{name} is core's own setting"
    if upper.startswith("RUNLEDGER_") and not name.startswith(settings_prefix(module)):
        return f"{name} is not under this module's own prefix {settings_prefix(module)}"
    return None


def module_scope(
    module: str, declared: frozenset[str], settings: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """A module's own settings: those under its prefix, and the names its manifest declared
    (looked up in ``settings``, then ``environ``). Never core's, never another module's."""
    prefix = settings_prefix(module)
    pool = {**{k: v for k, v in environ.items() if k in declared}, **settings}
    return {
        k: v
        for k, v in pool.items()
        if k not in CORE_SETTINGS and (k.startswith(prefix) or k in declared)
    }
