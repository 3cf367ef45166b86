"""`runledger webhook`: add, list and remove webhook subscriptions and see their deliveries: on
the store directly, or through a server as an admin."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.domain.subscription import FACTS

app = typer.Typer(help="Webhooks: who is told when a run needs a person, and what was sent.")

Events = Annotated[
    list[str],
    typer.Option("--event", help=f"what to be told of, repeatable: {', '.join(FACTS)}"),
]


@app.command("add")
def add(
    url: Annotated[str, typer.Argument(help="where to POST: http:// or https://")],
    events: Events,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Subscribe a URL; the secret that signs its deliveries is printed once."""
    with guarded(opened) as door:
        answer = guarded(lambda: door.add_webhook(url, events, idempotency_key))
    if as_json:
        print_json(answer)
        return
    console.print(f"webhook {answer.subscription_id} for {', '.join(answer.events)}")
    console.print("secret (shown once; the receiver checks signatures with it):")
    print(answer.secret)


@app.command("list")
def listing(as_json: AsJson = False) -> None:
    """Every subscription: its URL, events, and whether it is enabled; never a secret."""
    with guarded(opened) as door:
        found = guarded(door.webhooks)
    if as_json:
        print_json(found)
        return
    table = Table(title="Webhooks")
    table.add_column("id", no_wrap=True)
    for header in ("url", "events", "enabled", "added by", "added"):
        table.add_column(header)
    for w in found:
        table.add_row(
            str(w.subscription_id),
            safe_text(w.url),
            ", ".join(w.events),
            "yes" if w.enabled else "no",
            safe_text(w.added_by),
            f"{w.added_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)


@app.command("remove")
def remove(
    subscription_id: Annotated[UUID, typer.Argument(help="the webhook's id")],
    as_json: AsJson = False,
) -> None:
    """Remove a subscription; what was queued for it is not sent."""
    with guarded(opened) as door:
        found = guarded(lambda: door.remove_webhook(subscription_id))
    if as_json:
        print_json(found)
    else:
        console.print(f"removed {subscription_id}")


@app.command("deliveries")
def deliveries(
    subscription_id: Annotated[UUID, typer.Argument(help="the webhook's id")],
    limit: Annotated[int, typer.Option(min=1, max=1000, help="at most this many")] = 50,
    as_json: AsJson = False,
) -> None:
    """A subscription's deliveries, newest first, with every attempt."""
    with guarded(opened) as door:
        found = guarded(lambda: door.deliveries(subscription_id, limit))
    if as_json:
        print_json(found)
        return
    table = Table(title="Deliveries")
    table.add_column("id", no_wrap=True)
    for header in ("event", "state", "queued", "attempts"):
        table.add_column(header)
    for d in found:
        tried = "; ".join(
            f"{a.at:%H:%M:%S} {a.status if a.status is not None else safe_text(a.error, 80)}"
            for a in d.attempts
        )
        table.add_row(str(d.delivery_id), d.event, d.state, f"{d.queued_at:%Y-%m-%d %H:%M}", tried)
    console.print(table)
