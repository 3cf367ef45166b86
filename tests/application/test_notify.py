"""Inserts NOTIFY the table's channel, as the library's own insert does: a library
``PostgresSubscription`` over a runledger store hears of new events without polling."""

from __future__ import annotations

import threading
import time

import pytest
from eventsourcing.persistence import Notification
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresSubscription

from runledger.application.runledger import Runledger
from tests.support.recorded import entry

pytestmark = pytest.mark.postgres


def test_a_library_subscription_receives_the_events_saved_after_it_started(
    pg_rl: Runledger,
) -> None:
    recorder = pg_rl.app.recorder
    assert isinstance(recorder, PostgresApplicationRecorder)
    head = recorder.max_notification_id() or 0
    received: list[Notification] = []
    with PostgresSubscription(recorder, gt=head) as subscription:
        # Its first pull (of what was there) is done and it LISTENs: only a NOTIFY wakes it now.
        time.sleep(1.0)
        pg_rl.app.save(entry("one"))
        pg_rl.app.save(entry("two"))
        timer = threading.Timer(20.0, subscription.stop)
        timer.start()
        for notification in subscription:
            received.append(notification)
            if len(received) == 2:
                break
        timer.cancel()
    assert [n.originator_version for n in received] == [1, 1]
    assert vars(recorder)["insert_events"].__module__ == "runledger.application.store.pg_insert"
