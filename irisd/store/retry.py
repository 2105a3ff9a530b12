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

A batch may be held (``hold``): its writes then go with the next batch's, in the same
commit, or at the owner's timer when the time given has passed, whichever comes first;
what is to follow them runs once they are written. A tell's end is held so for the start
of a tell sent right after its answer: that tell goes to claude first, then both are
written in one commit (written at once, the end held the next tell up while claude waited).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
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
        self._hold_s: float | None = None  # hold() in the batch under way
        self._held: list[tuple[str | None, Write]] = []  # a held batch's writes, to go with the next
        self._held_until = math.inf
        self._then: list[Callable[[], Awaitable[None]]] = []  # to run once the held writes are written

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def batching(self) -> bool:
        return self._batch is not None

    @property
    def holding(self) -> bool:
        """A held batch waits to be written (``hold``)."""
        return bool(self._held or self._then)

    def next_deadline(self) -> float:
        return min(self._retry_at, self._held_until)

    def hold(self, within_s: float, then: Callable[[], Awaitable[None]]) -> None:
        """Inside a batch: at its end its writes are held, not written, to go with the next
        batch's (one commit), or written by the owner's timer (``retry``) ``within_s`` later,
        whichever comes first; ``then`` runs once they are written (or, refused, wait for a
        retry, as a flush's would)."""
        assert self._batch is not None, "hold() is for a batch"
        self._hold_s = within_s if self._hold_s is None else min(self._hold_s, within_s)
        self._then.append(then)

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
                if self._hold_s is not None:
                    self._held += self._batch
                    self._held_until = min(self._held_until, trio.current_time() + self._hold_s)
                    self._hold_s, self._batch = None, []
                while self._batch:  # (another task may save while a flush waits its turn)
                    await self.flush()
            self._batch = None

    async def flush(self) -> None:
        """Write what is held and what the batch holds so far, in one transaction (outside a
        batch, what is held), then run what was to follow the held writes. Never raises
        StoreError: refused, the writes wait for a retry."""
        if not self._batch and not self._held and not self._then:
            return
        batch = [*self._held, *(self._batch or [])]
        if self._batch is not None:
            self._batch = []
        then, self._held, self._held_until, self._then = self._then, [], math.inf, []
        try:
            if batch and not self._waiting:
                try:
                    await self.store.call(_in_one_transaction, [write for _, write in batch])
                    return
                except StoreError as exc:
                    log.warning("a write failed; it will be retried",
                                extra={"owner": self.owner, "error": exc.message})
                    self._retry_at = trio.current_time() + self._delay
            for key, (query, args) in batch:
                self._queue(key, query, args)
        finally:
            for follow in then:
                await follow()

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
        """Write what is held once its time has passed, and what waits for a retry, in
        order, if its time has come (stopping at the first failure)."""
        if now >= self._held_until:  # nothing came to go with it in time
            await self.flush()
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
