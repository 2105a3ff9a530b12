"""The courier: delivers persisted notifications, in order per pair, retrying
interrupted deliveries, expiring those past their TTL.

Delivery is at-least-once: a notification stays ``pending`` until its tell is queued,
is ``delivering`` while the tell runs and ``delivered`` once it completes; if irisd dies
before that, the next start puts it back to ``pending`` and delivers it again. Only a
``pending`` one expires: a delivery under way decides its own outcome.
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
    """Delivers notifications: one task per pair with notifications waiting, so a long
    tell of one pair never holds up the others."""

    def __init__(self, *, store: Store) -> None:
        self.store = store
        self.dispatcher: Dispatcher | None = None
        self._wakeup = trio.Event()
        self._delivering: set[tuple[str, str]] = set()  # pairs with a delivery task

    def wake_up(self) -> None:
        """A notification was stored (or a pair finished): look again now."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                self._wakeup = trio.Event()
                await self.start_deliveries(nursery)
                with trio.move_on_after(3600.0):  # TTLs expire even when nothing happens
                    await self._wakeup.wait()

    async def start_deliveries(self, nursery: trio.Nursery) -> None:
        """Expire what is past its TTL; start a task for each pair with work and none yet."""
        await self.store.call(notifications.expire, time.time())
        pending = await self.store.call(notifications.pending)

        def key(n: NotificationInfo) -> tuple[str, str]:
            return (n.from_team or "", n.to_team)

        for pair, group in itertools.groupby(sorted(pending, key=key), key=key):
            if pair not in self._delivering:
                self._delivering.add(pair)
                nursery.start_soon(self._deliver_pair, pair, list(group))

    async def _deliver_pair(self, pair: tuple[str, str], items: list[NotificationInfo]) -> None:
        """In order; after a failure the pair's line waits RETRY_AFTER_S, then is retried
        (later notifications wait for the failed one)."""
        try:
            for item in items:
                if not await self._deliver(item):
                    await trio.sleep(RETRY_AFTER_S)
                    return
        finally:
            self._delivering.discard(pair)
            self.wake_up()  # look again: a retry, or more that arrived for this pair meanwhile

    async def _deliver(self, item: NotificationInfo) -> bool:
        assert self.dispatcher is not None
        if item.expires_at <= time.time():
            return True  # past its TTL while earlier ones were delivered: the sweep expires it
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
