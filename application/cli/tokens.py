"""`runledger token`: issue, list and revoke the API's bearer tokens: on the store directly (the
first admin token is made so), or through a server as an admin."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, person_checked, role_checked
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.domain.token import ROLES

ROLE_HELP = (
    f"one of {', '.join(ROLES)}: a viewer reads, an operator acts on runs, "
    "an admin also manages tokens"
)


app = typer.Typer(help="The HTTP API's bearer tokens: each names a person and a role.")


@app.command("create")
def create(
    name: Annotated[
        str, typer.Argument(help="the person the token speaks for", callback=person_checked)
    ],
    role: Annotated[str, typer.Option(help=ROLE_HELP, callback=role_checked)] = "viewer",
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Issue a token; its secret is printed once and never stored. Under --idempotency-key a
    repeat issues nothing and is refused, naming the token (its secret was not kept)."""
    with guarded(opened) as door:
        answer = guarded(lambda: door.issue_token(name, role, idempotency_key))
    if as_json:
        print_json(answer)
        return
    console.print(f"token for {safe_text(answer.name)} ({answer.role}), id {answer.token_id}")
    console.print("secret (shown once; keep it somewhere safe):")
    print(answer.secret)


@app.command("list")
def listing(as_json: AsJson = False) -> None:
    """Every token ever issued, with who issued it and whether it is revoked."""
    with guarded(opened) as door:
        found = guarded(door.tokens)
    if as_json:
        print_json(found)
        return
    table = Table(title="Tokens")
    table.add_column("id", no_wrap=True)  # whole, for `token revoke`
    table.add_column("name")
    table.add_column("role", no_wrap=True)
    for header in ("issued by", "issued", "revoked"):
        table.add_column(header)
    for t in found:
        table.add_row(
            str(t.token_id),
            safe_text(t.name),
            t.role,
            safe_text(t.issued_by),
            f"{t.issued_at:%Y-%m-%d %H:%M}",
            f"{t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "",
        )
    console.print(table)


@app.command("revoke")
def revoke(
    token_id: Annotated[UUID, typer.Argument(help="the token's id")], as_json: AsJson = False
) -> None:
    """Revoke a token: requests carrying it are refused from now on."""
    with guarded(opened) as door:
        found = guarded(lambda: door.revoke_token(token_id))
    if as_json:
        print_json(found)
    else:
        console.print(f"revoked {token_id}")
