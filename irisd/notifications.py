"""The courier: delivers persisted notifications, in order per pair, retrying
interrupted deliveries, expiring those past their TTL.

Delivery is at-least-once: a notification stays ``pending`` until its tell is queued,
is ``delivering`` while the tell runs and ``delivered`` once it completes; if irisd dies
before that, the next start puts it back to ``pending`` and delivers it again. Only a
``pending`` one expires: a delivery under way decides its own outcome.

A notification keeps the chain it was sent in (``NotificationInfo.chain``): its delivery
is a tell that continues it, admitted like any (the hop limit, the loop guard, the chain's
budget). One its chain refuses is ``refused`` for good (the refused tell is recorded in
the chain's history); a budget or a full queue only delays it.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import Literal

import trio

from irisd.store import notifications
from irisd.store.db import StoreError
from irisd.store.facade import Store
from irisd.tell.service import TellService
from protocol.errors import IrisError, LoopError
from protocol.messages import NotificationInfo

log = logging.getLogger("irisd.notifications")

RETRY_AFTER_S = 30.0  # after a delivery whose tell failed
STORE_RETRY_S = (1.0, 30.0)  # after the database refused a write: from 1 s, doubling


class Courier:
    """Delivers notifications: one task per pair with notifications waiting, so a long
    tell of one pair never holds up the others."""

    def __init__(self, *, store: Store, tells: TellService) -> None:
        self.store = store
        self.tells = tells  # a delivery is a tell of kind "notification"
        self._wakeup = trio.Event()
        self._delivering: set[tuple[str, str]] = set()  # pairs with a delivery task
        self._store_delay: dict[tuple[str, str], float] = {}  # pairs waiting for the database

    def wake_up(self) -> None:
        """A notification was stored (or a pair finished): look again now."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            delay = STORE_RETRY_S[0]
            while True:
                self._wakeup = trio.Event()
                wait = 3600.0  # TTLs expire even when nothing happens
                try:
                    await self.start_deliveries(nursery)
                    delay = STORE_RETRY_S[0]
                except StoreError as exc:
                    log.warning("cannot look for notifications; retrying", extra={"error": exc.message,
                                                                                  "retry_in_s": delay})
                    wait, delay = delay, min(delay * 2, STORE_RETRY_S[1])
                with trio.move_on_after(wait):
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
        """In order; after a failure the pair's line waits (RETRY_AFTER_S after a failed
        tell, from 1 s doubling to 30 s while the database refuses writes), then is retried
        (later notifications wait for the failed one)."""
        try:
            for item in items:
                outcome = await self._deliver(item)
                if outcome in ("delivered", "refused"):  # done with, either way: the next one
                    self._store_delay.pop(pair, None)
                    continue
                delay = RETRY_AFTER_S
                if outcome == "store":
                    delay = self._store_delay.get(pair, STORE_RETRY_S[0])
                    self._store_delay[pair] = min(delay * 2, STORE_RETRY_S[1])
                await trio.sleep(delay)
                return
        except Exception:  # a bug must not stop the courier (nor irisd): this pair's line waits
            log.exception("delivering a notification failed", extra={"pair": pair})
            await trio.sleep(RETRY_AFTER_S)
        finally:
            self._delivering.discard(pair)
            self.wake_up()  # look again: a retry, or more that arrived for this pair meanwhile

    async def _deliver(self, item: NotificationInfo) -> Literal["delivered", "refused", "failed", "store"]:
        if item.expires_at <= time.time():
            return "delivered"  # past its TTL while earlier ones were delivered: the sweep expires it
        try:
            tell = await self.tells.submit(
                item.to_team, item.message, item.from_team, 0, kind="notification", across=item.chain
            )
        except StoreError as exc:  # nothing was queued; the notification stays pending
            log.warning("notification not delivered yet: the database refuses writes",
                        extra={"id": item.id, "error": exc.message})
            return "store"
        except LoopError as exc:  # its chain went too far: never delivered, whenever tried
            await self._mark_until_stored(item.id, "refused", error=exc.message)
            log.warning("notification refused", extra={"id": item.id, "error": exc.message})
            return "refused"
        except IrisError as exc:  # the team was removed from the config, the queue is full...
            await self._mark(item.id, "pending", error=exc.message)
            log.warning("notification not delivered", extra={"id": item.id, "error": exc.message})
            return "failed"
        self.tells.end_awaited(tell.id)  # the pair's next delivery waits for it (below)
        # Best effort: if this write fails, the row says pending and is picked again anyway.
        await self._mark(item.id, "delivering", tell_id=tell.id)
        await tell.finished.wait()
        if tell.machine.status == "completed":
            # Must be stored, or it would be delivered again: retried until it is.
            await self._mark_until_stored(item.id, "delivered", tell_id=tell.id)
            return "delivered"
        await self._mark_until_stored(item.id, "pending", error=tell.machine.error)
        return "failed"

    async def _mark(self, notification_id: str, status: str, *, tell_id: str = "", error: str = "") -> bool:
        try:
            await self.store.call(notifications.mark, notification_id, status, tell_id=tell_id, error=error)
            return True
        except StoreError as exc:
            log.warning("cannot record a notification's state", extra={"id": notification_id, "status": status,
                                                                       "error": exc.message})
            return False

    async def _mark_until_stored(self, notification_id: str, status: str, *, tell_id: str = "",
                                 error: str = "") -> None:
        delay = STORE_RETRY_S[0]
        while not await self._mark(notification_id, status, tell_id=tell_id, error=error):
            await trio.sleep(delay)
            delay = min(delay * 2, STORE_RETRY_S[1])
