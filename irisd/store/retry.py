"""Writes that must happen even when the database refuses them for a while.

A pair records its tells, their transcripts and its process state as they change. When
a write fails (a full disk, a read-only file, an I/O error), the work itself goes on
(the caller still gets the answer), and the write waits here to be retried by the
owner's timer: after 1 s, then doubling, at most every 30 s, in the order the writes
were made. A keyed write (the state of one tell, the pair's process state) replaces an
older one of the same key still waiting: only the latest state matters. Once the
database takes writes again, the queue drains and the stored state converges.

The queue is bounded: past ``MAX_WAITING`` writes, unkeyed ones (transcript lines) are
dropped, and the log says how many.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import trio

from irisd.store.db import StoreError
from irisd.store.facade import Store

log = logging.getLogger("irisd.store")

FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0
MAX_WAITING = 10_000


class PendingWrites:
    def __init__(self, store: Store, *, owner: str) -> None:
        self.store = store
        self.owner = owner
        self._waiting: dict[object, tuple[Callable[..., Any], tuple[Any, ...]]] = {}
        self._serial = 0
        self._delay = FIRST_RETRY_S
        self._retry_at = math.inf
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def next_deadline(self) -> float:
        return self._retry_at

    async def save(self, key: str | None, query: Callable[..., Any], *args: Any) -> bool:
        """Write now if nothing waits before it, else (or if it fails) queue it for a
        retry. Returns whether it is written. Never raises StoreError."""
        if not self._waiting:
            try:
                await self.store.call(query, *args)
                return True
            except StoreError as exc:
                log.warning("a write failed; it will be retried", extra={"owner": self.owner, "error": exc.message})
                self._retry_at = trio.current_time() + self._delay
        self._queue(key, query, args)
        return False

    def _queue(self, key: str | None, query: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if key is None:
            if len(self._waiting) >= MAX_WAITING:
                self.dropped += 1
                return
            self._serial += 1
            self._waiting[self._serial] = (query, args)
        else:
            self._waiting[key] = (query, args)  # keeps the older one's place

    async def retry(self, now: float) -> None:
        """Write what waits, in order, if its time has come; stop at the first failure."""
        if now < self._retry_at:
            return
        if not self._waiting and not self.dropped:  # nothing failed: nothing to report
            self._retry_at = math.inf
            return
        while self._waiting:
            key, (query, args) = next(iter(self._waiting.items()))
            try:
                await self.store.call(query, *args)
            except StoreError:
                self._delay = min(self._delay * 2, MAX_RETRY_S)
                self._retry_at = trio.current_time() + self._delay
                return
            if self._waiting.get(key) == (query, args):
                del self._waiting[key]
        if self.dropped:
            log.warning("writes were dropped while the database refused them",
                        extra={"owner": self.owner, "dropped": self.dropped})
            self.dropped = 0
        log.info("the database takes writes again; saved what waited", extra={"owner": self.owner})
        self._delay = FIRST_RETRY_S
        self._retry_at = math.inf
