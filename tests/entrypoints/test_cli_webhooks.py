"""`runledger webhook` on the store directly and through a server (test_cli_json's ``cli``):
add prints the secret once, list never does, deliveries shows the attempts, remove, and a
hostile URL (one into a network only runledger reaches among them) is one sentence and exit 1
either way."""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from runledger.application.reading.schemas.webhooks import AddedWebhook, Webhook, WebhookDelivery
from tests.entrypoints.test_cli_json import Cli, cli_fixture  # noqa: F401  (a fixture)


def test_webhook_add_list_deliveries_and_remove(cli: Cli) -> None:
    added = AddedWebhook.model_validate_json(
        cli("webhook", "add", "https://example.com/hook", "--event", "run.aborted", "--json").out
    )
    assert added.secret.startswith("whsec_")
    listed = TypeAdapter(list[Webhook]).validate_json(cli("webhook", "list", "--json").out)
    assert [w.subscription_id for w in listed] == [added.subscription_id]
    assert "whsec_" not in cli("webhook", "list").out
    sid = str(added.subscription_id)
    found = cli("webhook", "deliveries", sid, "--json").out
    assert TypeAdapter(list[WebhookDelivery]).validate_json(found) == []
    assert json.loads(cli("webhook", "remove", sid, "--json").out)["subscription_id"] == sid
    assert "removed" not in cli("webhook", "remove", sid, code=1).out
    assert TypeAdapter(list[Webhook]).validate_json(cli("webhook", "list", "--json").out) == []


def test_a_hostile_url_or_event_is_one_sentence_and_exit_1(cli: Cli) -> None:
    hostile = ("ftp://example.com/", "http://u:p@example.com/", "http://x/\x1b[31m")
    for url in (*hostile, "http://169.254.169.254/", "http://[::ffff:127.0.0.1]:8080/"):
        done = cli("webhook", "add", url, "--event", "run.aborted", code=1)
        assert "url" in done.err + done.out and "Traceback" not in done.err
    done = cli("webhook", "add", "https://example.com/", "--event", "run.exploded", code=1)
    assert "events" in done.err + done.out
    assert cli("webhook", "list", "--json").out.strip() == "[]"
