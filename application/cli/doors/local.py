"""The store opened directly, as a door (door.py): an administrator's, who holds the store's
credentials; every act names the person --by gives."""

from __future__ import annotations

from types import TracebackType

from runledger.application.cli.doors.local_more import LocalFleet
from runledger.application.cli.doors.webhooks import LocalWebhooks


class Local(LocalFleet, LocalWebhooks):
    """The composition root's services and the read layer, answering the API's schemas."""

    def __enter__(self) -> Local:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.rl.close()
