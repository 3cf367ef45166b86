"""Where the CLI finds a server: RUNLEDGER_SERVER and RUNLEDGER_TOKEN (for scripts; they win),
else the current context `runledger login` saved in the user's config directory. The file holds
bearer tokens, so it is created readable by its owner only (0600), never widened afterwards."""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import httpx

from runledger.application.display import safe_repr
from runledger.application.errors import BadRequest, ConfigError

SERVER_ENV = "RUNLEDGER_SERVER"
TOKEN_ENV = "RUNLEDGER_TOKEN"
TOKEN = re.compile(r"[\x21-\x7e]{1,1000}")
"""What a bearer token can be: printable ASCII, as an HTTP header carries it."""
NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
"""A context's name: what `context use` takes, and a TOML key with nothing to escape."""


@dataclass(frozen=True)
class Server:
    """A server and the token the CLI speaks to it with (never printed)."""

    url: str
    token: str
    context: str | None = None


def config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "runledger" / "contexts.toml"


def server() -> Server | None:
    """The server the environment or the current context names, or None: the store directly."""
    url, token = os.environ.get(SERVER_ENV), os.environ.get(TOKEN_ENV)
    if url or token:
        if not (url and token):
            raise ConfigError(f"{SERVER_ENV} and {TOKEN_ENV} go together; only one is set")
        return Server(checked_url(url), checked_token(token, TOKEN_ENV))
    chosen = current()
    found = contexts().get(chosen) if chosen is not None else None
    if found is None:
        return None
    where = f"context {chosen} ({config_file()})"
    url, token = str(found.get("server", "")), str(found.get("token", ""))
    return Server(checked_url(url), checked_token(token, where), chosen)


def checked_url(url: str) -> str:
    shaped = re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url) and url.isprintable()
    if not shaped or not url.isascii() or len(url) > 2_000 or not _parsed(url):
        raise BadRequest(f"{safe_repr(url[:200])} is not a server's address (http://host:port)")
    if "@" in url.split("/")[2]:
        raise BadRequest("a server's address carries no user or password: the token is the key")
    return url.rstrip("/")


def _parsed(url: str) -> bool:
    """Whether the HTTP client reads the address (a port of digits, a host it can encode)."""
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        return False
    return True


def checked_token(token: str, source: str) -> str:
    if not TOKEN.fullmatch(token):
        raise ConfigError(f"{source}: not a token runledger issues (printable ASCII, no spaces)")
    return token


def checked_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise BadRequest(
            f"context {safe_repr(name[:100])}: a name is 1 to 64 letters, digits, and _ . : -"
        )
    return name


def load() -> dict[str, object]:
    """The saved contexts ({} when there is no file)."""
    path = config_file()
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: not a contexts file runledger can read ({error})") from None


def contexts() -> dict[str, dict[str, str]]:
    found = load().get("contexts", {})
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, dict)}


def current() -> str | None:
    found = load().get("current")
    return found if isinstance(found, str) else None


def save(known: dict[str, dict[str, str]], chosen: str | None) -> Path:
    """Write every context and the current one, replacing the file whole. The new file is
    created 0600 before a byte of it is written."""
    path = config_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)  # a leftover keeps its mode; this one is made 0600
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(_toml(known, chosen))
    os.replace(partial, path)
    return path


def _toml(known: dict[str, dict[str, str]], chosen: str | None) -> str:
    # JSON's string escapes (without ensure_ascii) are TOML's basic string's.
    lines = [] if chosen is None else [f"current = {json.dumps(chosen, ensure_ascii=False)}"]
    for name, context in sorted(known.items()):
        lines += ["", f"[contexts.{json.dumps(name)}]"]
        lines += [f"{k} = {json.dumps(str(v), ensure_ascii=False)}" for k, v in context.items()]
    return "\n".join(lines) + "\n"
