"""`runledger login URL` and `runledger context list | use`: the servers the CLI talks to as a
token's person, kept as named contexts in a file only their owner can read. The token is asked
without echo (or read from stdin, for scripts) and never printed."""

from __future__ import annotations

import re
import sys
from typing import Annotated
from urllib.parse import urlsplit

import typer
from rich.text import Text

from runledger.application.cli.answers import Context, SignedIn, Unset, print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import contexts as saved
from runledger.application.cli.doors.remote import Remote
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.options import AsJson
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest

app = typer.Typer(
    help="The servers `runledger login` saved: each a context with its token; one is current."
)


def login(
    url: Annotated[str, typer.Argument(metavar="URL", help="the server: http(s)://host:port")],
    name: Annotated[
        str | None, typer.Option("--name", help="the context's name (default: host:port)")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Sign in to a server with a token, asked without echo: checked by the server, then kept
    as the current context in a file only you can read. Every command that reads or acts then
    goes through the server as the token's person."""
    address = guarded(lambda: saved.checked_url(url))
    chosen = guarded(lambda: saved.checked_name(name or _named(address)))
    token = guarded(_token)
    with Remote(saved.Server(address, token)) as door:
        me = guarded(door.me)
    known = guarded(saved.contexts)
    known[chosen] = {"server": address, "token": token}
    where = guarded(lambda: saved.save(known, chosen))
    if as_json:
        print_json(SignedIn(context=chosen, server=address, name=me.name, role=me.role))
        return
    console.print(
        Text(
            f"signed in to {address} as {safe_text(me.name)} ({me.role}); "
            f"context {chosen} is current (kept in {where})"
        ),
        soft_wrap=True,
    )


def _named(address: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", urlsplit(address).netloc)[:64]


def _token() -> str:
    """The token: asked at a terminal without echo, else the first line of stdin."""
    if sys.stdin.isatty():
        given = str(typer.prompt("Token", hide_input=True))
    else:
        given = sys.stdin.readline()
    token = given.strip()
    if not token:
        raise Usage("login needs a token: runledger token create NAME --role R issues one")
    return saved.checked_token(token, "the token given")


@app.command("list")
def listing(as_json: AsJson = False) -> None:
    """Every saved context: its name and server, and which is current (never a token)."""
    known, current = guarded(saved.contexts), guarded(saved.current)
    found = [
        Context(name=name, server=str(c.get("server", "")), current=name == current)
        for name, c in sorted(known.items())
    ]
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("No contexts yet: runledger login URL saves one.")
        return
    table = Table("", "name", "server", title=f"Contexts ({saved.config_file()})")
    for context in found:
        mark = "*" if context.current else ""
        table.add_row(mark, Text(safe_text(context.name)), Text(safe_text(context.server)))
    console.print(table)


@app.command("use")
def use(
    name: Annotated[str, typer.Argument(metavar="NAME", help="a saved context")],
    as_json: AsJson = False,
) -> None:
    """Make a saved context current: commands go through its server from now on."""
    known = guarded(saved.contexts)
    if name not in known:
        listed = ", ".join(sorted(known)) or "none; runledger login URL saves one"
        guarded(lambda: _refuse(f"no context {safe_text(name, 100)!r} (saved: {listed})"))
    guarded(lambda: saved.save(known, name))
    server = str(known[name].get("server", ""))
    if as_json:
        print_json(Context(name=name, server=server, current=True))
    else:
        console.print(Text(f"context {name} is current: {safe_text(server)}"))


@app.command("unset")
def unset(as_json: AsJson = False) -> None:
    """Make no context current: commands open the store directly again (an administrator's
    door, RUNLEDGER_DATABASE_URL). The saved contexts stay, for `context use`."""
    guarded(lambda: saved.save(guarded(saved.contexts), None))
    if as_json:
        print_json(Unset(current=None))
    else:
        console.print("no context is current: commands open the store directly")


def _refuse(said: str) -> None:
    raise BadRequest(said)
