"""The environment variables `--help` lists: read off the settings' own definitions (their
names, defaults and old names), so a setting added there without a meaning here fails a test."""

from __future__ import annotations

from runledger.application.settings import ALIASES, ENV_NAMES, Settings

MEANINGS = {
    "database_url": "the store: sqlite:///path or postgresql://user@host:port/db?schema=name",
    "max_revert_attempts": "automatic revert attempts per entry",
    "cleanup_run_batch": "runs one sweep pass works",
    "cleanup_groups_per_run": "groups of entries a sweep pass works per run",
    "cleanup_budget_s": "seconds a tick's cleanup leg may sweep, pass after pass",
    "cleanup_lanes": "lanes a sweep pass works its runs in at once (0: PostgreSQL 2, SQLite 1)",
    "wake_s": "seconds between a resting runner's looks for runs that ended",
    "advance_run_batch": "running runs the advance leg looks at per tick",
    "steps_per_run_tick": "steps one run may dispatch per tick",
    "steps_per_tick": "steps a tick may dispatch in all",
    "lease_max_s": "the longest a lease may last, in seconds",
    "retry_delays_s": "seconds to wait after the 1st, 2nd, ... failed attempt",
    "retry_jitter": "each wait stretched or shrunk by up to this fraction",
    "runner_gone_s": "a runner without a heartbeat this long is shown as gone",
    "shutdown_grace_s": "a stopping runner waits this long for calls abandoned at their deadline",
    "webhook_attempts": "attempts at one webhook delivery before it is marked failed",
    "webhook_delay_s": "seconds before a webhook's first retry; each later one waits twice as long",
    "webhook_allow_networks": "networks (CIDRs) webhooks may be sent into although not public",
    "ready_lag": "/readyz answers 503 once a projection is this many events behind",
    "projection_wait_s": "PostgreSQL: seconds a read waits for the projector before a 503",
    "modules_dir": "a folder of module folders to load",
    "builtin_modules": "built-in modules to load, separated by commas (sandbox,redis)",
    "module_load_budget_s": "seconds a module's import and register() may take",
    "connect_timeout_s": "seconds to wait for a PostgreSQL connection",
    "store_timeout_s": "seconds one round trip to PostgreSQL may take (0: no bound)",
    "failed_auth_per_minute": "wrong sign-ins and tokens from one address in a minute before 429",
    "trusted_proxies": "proxies whose X-Forwarded-For and -Proto are believed, by commas",
    "cookie_secure": "the console's cookie is Secure on every answer, not only over https",
    "session_hours": "hours a console sign-in lasts",
    "session_secret": "signs console sessions; set the same on every serve process",
}
"""What each setting of ENV_NAMES means, by its field name."""

NOT_SETTINGS = (
    (
        "RUNLEDGER_SERVER, RUNLEDGER_TOKEN",
        "a server and a bearer token: commands that read or act go through its API as the "
        "token's person (they win over the context runledger login saved)",
    ),
    ("RUNLEDGER_LOG_FORMAT", "json for one JSON object per log line (serve, runner)"),
    (
        "RUNLEDGER_<MODULE>_*",
        "a module's own settings, such as RUNLEDGER_SANDBOX_PATH",
    ),
)
"""Read elsewhere than Settings: by the CLI's doors, the process's logging, and each module."""


def _default(field: str) -> str:
    value = Settings.model_fields[field].default
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" for v in value)
    return str(value)


def listing() -> list[tuple[str, str]]:
    """(name with its default, what it means) for every variable the command reads."""
    found = [(_named(field, name), MEANINGS[field]) for field, name in ENV_NAMES.items()]
    return [*found, *NOT_SETTINGS]


def _named(field: str, name: str) -> str:
    alias = ALIASES.get(field)
    return f"{name} (default {_default(field)}{f'; old name {alias}' if alias else ''})"


def epilog() -> str:
    lines = (f"  {name}\n      {meaning}" for name, meaning in listing())
    return "Environment:\n" + "\n".join(lines)
