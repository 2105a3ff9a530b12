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

Inside ``batch()`` the writes are kept and go to the database together, in one
transaction, when the block ends or at ``flush()``: a warm tell's start (the pair's state
and the tell's) is written after claude has its turn, its end (the exchange, the
transcript, the final state) in one commit instead of one each. A refused batch waits
here as its writes would have, one by one, in order.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import apsw
import trio

from irisd.store.db import StoreError
from irisd.store.facade import Store

log = logging.getLogger("irisd.store")

FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0
MAX_WAITING = 10_000

Write = tuple[Callable[..., Any], tuple[Any, ...]]


class PendingWrites:
    def __init__(self, store: Store, *, owner: str) -> None:
        self.store = store
        self.owner = owner
        self._waiting: dict[object, Write] = {}
        self._batch: list[tuple[str | None, Write]] | None = None  # inside batch(): to write at its end
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
        retry; inside ``batch()``, at the batch's end. Returns whether it is written.
        Never raises StoreError."""
        if self._batch is not None:
            self._batch.append((key, (query, args)))
            return False
        if not self._waiting:
            try:
                await self.store.call(query, *args)
                return True
            except StoreError as exc:
                log.warning("a write failed; it will be retried", extra={"owner": self.owner, "error": exc.message})
                self._retry_at = trio.current_time() + self._delay
        self._queue(key, query, args)
        return False

    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """The writes saved inside the block go to the database in one transaction when it
        ends (and at each ``flush()``), whatever ends it: cancellation does not lose them.
        A block inside another's joins it."""
        if self._batch is not None:
            yield
            return
        self._batch = []
        try:
            yield
        finally:
            with trio.CancelScope(shield=True):
                while self._batch:  # (another task may save while a flush waits its turn)
                    await self.flush()
            self._batch = None

    async def flush(self) -> None:
        """Write what the batch holds so far, in one transaction (nothing outside a batch).
        Never raises StoreError: refused, its writes wait for a retry."""
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        if not self._waiting:
            try:
                await self.store.call(_in_one_transaction, [write for _, write in batch])
                return
            except StoreError as exc:
                log.warning("a write failed; it will be retried", extra={"owner": self.owner, "error": exc.message})
                self._retry_at = trio.current_time() + self._delay
        for key, (query, args) in batch:
            self._queue(key, query, args)

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


def _in_one_transaction(db: apsw.Connection, writes: list[Write]) -> None:
    with db:
        for query, args in writes:
            query(db, *args)
