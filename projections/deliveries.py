"""Reads over the deliveries view: what is due for a sender, and a subscription's deliveries."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.projections.backend import Backend
from runledger.projections.errors import ProjectionStuck


class DeliveryRows:
    """The deliveries as the view holds them; ``fresh`` brings the view level first."""

    def __init__(self, backend: Backend, fresh: Callable[[], object]) -> None:
        self.backend = backend
        self.fresh = fresh

    def _ids(self, statement: str, params: list[Any]) -> list[UUID]:
        # Another view stuck on an event stops every catch-up: these rows are read as they
        # stand then, so that "projection stuck" itself is still sent.
        with contextlib.suppress(ProjectionStuck):
            self.fresh()
        with self.backend.transaction(commit=False) as cursor:
            cursor.execute(self.backend.sql(statement), params)
            return [UUID(row["delivery_id"]) for row in cursor.fetchall()]

    def due(self, now: datetime, limit: int) -> list[UUID]:
        """Pending deliveries whose back-off has passed and whom no live claim holds."""
        at = now.timestamp()
        return self._ids(
            "SELECT delivery_id FROM {rl_deliveries} WHERE state = 'pending' AND next_at <= %s"
            " AND (claim_until IS NULL OR claim_until <= %s) ORDER BY next_at LIMIT %s",
            [at, at, limit],
        )

    def of_subscription(self, subscription_id: UUID, limit: int) -> list[UUID]:
        """A subscription's deliveries, newest first."""
        return self._ids(
            "SELECT delivery_id FROM {rl_deliveries} WHERE subscription_id = %s"
            " ORDER BY queued_at DESC, delivery_id LIMIT %s",
            [str(subscription_id), limit],
        )
