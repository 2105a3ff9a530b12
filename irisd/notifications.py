"""The courier: delivers persisted notifications, in order per pair, retrying
interrupted deliveries, expiring those past their TTL.

Delivery is at-least-once: a notification is marked ``delivering`` before its tell is
queued and ``delivered`` once the tell completes; if irisd dies in between, the next
start puts it back to ``pending`` and delivers it again.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING

import trio

from irisd.store import notifications
from irisd.store.facade import Store
from protocol.errors import IrisError
from protocol.messages import NotificationInfo

if TYPE_CHECKING:
    from irisd.dispatch import Dispatcher

log = logging.getLogger("irisd.notifications")

RETRY_AFTER_S = 30.0


class Courier:
    def __init__(self, *, store: Store) -> None:
        self.store = store
        self.dispatcher: Dispatcher | None = None
        self._wakeup = trio.Event()

    def wake_up(self) -> None:
        """A notification was stored: deliver it now rather than at the next round."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._wakeup = trio.Event()
            failures = await self.deliver_pending()
            with trio.move_on_after(RETRY_AFTER_S if failures else 3600.0):
                await self._wakeup.wait()

    async def deliver_pending(self) -> int:
        """One round: every pending notification, pairs in parallel, each pair in order.
        Returns how many deliveries failed (to be retried)."""
        await self.store.call(notifications.expire, time.time())
        pending = await self.store.call(notifications.pending)
        failures = 0

        async def deliver_pair(items: list[NotificationInfo]) -> None:
            nonlocal failures
            for item in items:
                if not await self._deliver(item):
                    failures += 1
                    return  # keep the order: later ones wait for this one

        def key(n: NotificationInfo) -> tuple[str, str]:
            return (n.from_team or "", n.to_team)

        async with trio.open_nursery() as nursery:
            for _, group in itertools.groupby(sorted(pending, key=key), key=key):
                nursery.start_soon(deliver_pair, list(group))
        return failures

    async def _deliver(self, item: NotificationInfo) -> bool:
        assert self.dispatcher is not None
        try:
            tell = await self.dispatcher.submit(
                item.to_team, item.message, item.from_team, 0, kind="notification"
            )
        except IrisError as exc:  # the team was removed from the config, the queue is full...
            await self.store.call(notifications.mark, item.id, "pending", error=exc.message)
            log.warning("notification not delivered", extra={"id": item.id, "error": exc.message})
            return False
        await self.store.call(notifications.mark, item.id, "delivering", tell_id=tell.id)
        await tell.finished.wait()
        if tell.machine.status == "completed":
            await self.store.call(notifications.mark, item.id, "delivered", tell_id=tell.id)
            return True
        await self.store.call(notifications.mark, item.id, "pending", error=tell.machine.error)
        return False
