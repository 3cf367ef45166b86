"""Webhooks from processes, on an SQLite file and on PostgreSQL: a runner process sends what a
fact queued; and at least once across a death: a process saves a fact (its delivery rides in
the same save), claims the delivery, and is killed by its pid before it sends; another process
sends it once its claim lapses, and the receiver gets it once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.services.webhooks_send import CLAIM_S
from runledger.application.settings import Settings
from runledger.domain.run import Run
from tests.entrypoints.test_cli import RUNLEDGER
from tests.support.receiver import LOCAL, LOCAL_NETWORKS, receiving

pytestmark = pytest.mark.slow

DOOMED = textwrap.dedent(
    """
    import sys, time
    from datetime import UTC, datetime
    from uuid import uuid4
    from runledger.application.bootstrap import bootstrap
    from runledger.application.modules.protocol import Registry
    from runledger.application.settings import Settings
    from runledger.domain.run import Run

    rl = bootstrap(Settings(database_url=sys.argv[1]), Registry())
    run = Run.start(uuid4(), "told", datetime.now(UTC))
    rl.app.save(run)
    run.abort("killed before it could tell anyone", datetime.now(UTC))
    rl.app.save(run)  # the fact, and its delivery with it
    sender = rl.sender("doomed")
    [due] = rl.webhooks.rows.due(datetime.now(UTC), 10)
    assert sender._claim(due) is not None
    print(run.id, flush=True)
    time.sleep(600)  # killed here: claimed, never sent
    """
)


def test_a_delivery_claimed_by_a_killed_process_is_sent_by_another(store_url: str) -> None:
    local = Settings(database_url=store_url, webhook_allow_networks=LOCAL_NETWORKS)
    with bootstrap(local, Registry()) as rl, receiving() as receiver:
        rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        doomed = subprocess.Popen(
            [sys.executable, "-c", DOOMED, store_url], stdout=subprocess.PIPE, text=True
        )
        try:
            assert doomed.stdout is not None
            run_id = doomed.stdout.readline().strip()
            assert run_id, "the doomed process saved and claimed nothing"
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=60)
        assert rl.sender("survivor").send_due() == 0  # its claim still holds
        assert receiver.received == []
        lapsed = datetime.now(UTC) + timedelta(seconds=CLAIM_S + 5)
        with bootstrap(rl.settings, Registry(), clock=lambda: lapsed) as later:
            assert later.sender("survivor").send_due() == 1
            assert later.sender("survivor").send_due() == 0
    [got] = receiver.received
    assert json.loads(got.body)["run_id"] == run_id


def test_a_runner_process_sends_what_a_fact_queued_and_stops_on_sigterm(
    store_url: str, tmp_path: Path
) -> None:
    local = Settings(database_url=store_url, webhook_allow_networks=LOCAL_NETWORKS)
    with bootstrap(local, Registry()) as rl, receiving() as receiver:
        rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        now = datetime.now(UTC)
        run = Run.start(uuid4(), "told by a runner", now)
        rl.app.save(run)
        run.abort("nobody was there", now)
        rl.app.save(run)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
        env |= {"RUNLEDGER_DATABASE_URL": store_url, "RUNLEDGER_BUILTIN_MODULES": ""}
        env["RUNLEDGER_WEBHOOK_ALLOW_NETWORKS"] = LOCAL
        runner = subprocess.Popen(
            [*RUNLEDGER, "runner", "--interval", "0.2"], env=env, cwd=tmp_path, text=True
        )
        try:
            deadline = time.monotonic() + 60
            while not receiver.received and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            runner.send_signal(signal.SIGTERM)
            assert runner.wait(timeout=60) == 0
    [got] = receiver.received
    assert json.loads(got.body)["run_id"] == str(run.id)
