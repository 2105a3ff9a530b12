"""The one door from the event loop to the database.

Every query is a small synchronous function taking the connection first. Two ways in:

* ``Store.call`` runs it on the event loop, on the writer connection. A small query in
  WAL mode with ``synchronous=NORMAL`` takes microseconds (no fsync on commit), while a
  hop to a worker thread and back costs about 0.2 ms: a warm tell makes a dozen small
  writes, so the hops were most of irisd's own time on the warm path.
* ``Store.read`` runs it in a worker thread on a second, read-only connection: for the
  reads that can be large (a whole transcript, a report over many tells, the ledger's
  sums), so they never stall the loop. WAL lets that reader see every committed write
  while the writer goes on.

What could still stall the loop from the writer, a WAL checkpoint (it copies pages into
the database file and syncs it), does not run there: the writer's automatic checkpoint
is off and ``serve_checkpoints`` runs one on the reader's thread once enough pages have
been committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import apsw
import trio

from irisd.store.db import StoreError, open_database, open_reader, store_error

log = logging.getLogger("irisd.store")

P = ParamSpec("P")
T = TypeVar("T")

# WAL pages committed before a checkpoint is due (SQLite's own automatic checkpoint
# uses 1,000 pages, about 4 MiB).
CHECKPOINT_PAGES = 1000


class Store:
    def __init__(
        self, connection: apsw.Connection, *, reader: apsw.Connection | None = None, inline: bool = False
    ) -> None:
        self._connection = connection
        self._reader = reader
        self._limiter = trio.CapacityLimiter(1)
        # Inline runs the large reads on the event loop too (on the writer connection):
        # for tests on trio's autojump clock, which would jump virtual time while a
        # worker thread runs, and for a store opened without a reader.
        self._inline = inline or reader is None
        self.refusals = 0  # how many times the writer failed (the health monitor watches it grow)
        self.last_refusal = ""  # why, the last time
        self._wal_pages = 0
        self._checkpoint_due = trio.Event()
        if not self._inline:
            connection.execute("PRAGMA wal_autocheckpoint = 0")
            connection.set_wal_hook(self._on_commit)

    @classmethod
    async def open(cls, path: Path) -> Store:
        connection = await trio.to_thread.run_sync(open_database, path)
        reader = await trio.to_thread.run_sync(open_reader, path)
        return cls(connection, reader=reader)

    async def call(
        self,
        query: Callable[Concatenate[apsw.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``query(connection, *args, **kwargs)`` on the writer connection, on the
        event loop: for writes and small reads.

        Raises StoreError (saying what to do) when the database fails: a full disk, a
        read-only file, an I/O error; the failing statement's transaction is rolled back.
        Cancellation: only before the query starts (it runs to the end once started).
        """
        await trio.lowlevel.checkpoint()
        return self._run(self._connection, query, *args, **kwargs)

    async def read(
        self,
        query: Callable[Concatenate[apsw.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run a read that may be large in the worker thread, on the reader connection.

        ``query`` must not write. Errors as for ``call``. Cancellation: the query still
        runs to the end (SQLite cannot be interrupted half-way safely); the caller just
        stops waiting for it.
        """
        if self._inline or self._reader is None:
            return await self.call(query, *args, **kwargs)
        reader = self._reader
        return await trio.to_thread.run_sync(
            lambda: self._run(reader, query, *args, **kwargs), limiter=self._limiter, abandon_on_cancel=False
        )

    async def serve_checkpoints(self) -> None:
        """Checkpoint the WAL in the worker thread whenever enough has been committed; runs
        until cancelled (a checkpoint under way finishes first)."""
        if self._inline or self._reader is None:
            return
        reader = self._reader
        while True:
            await self._checkpoint_due.wait()
            self._checkpoint_due = trio.Event()
            self._wal_pages = 0
            try:
                await trio.to_thread.run_sync(
                    lambda: self._run(reader, _checkpoint), limiter=self._limiter, abandon_on_cancel=False
                )
            except StoreError as exc:  # a full disk: the next commits make it due again
                log.warning("could not checkpoint the database", extra={"error": exc.message})

    def _on_commit(self, _connection: apsw.Connection, _name: str, pages: int) -> int:
        self._wal_pages = pages
        if pages >= CHECKPOINT_PAGES:
            self._checkpoint_due.set()
        return apsw.SQLITE_OK

    def _run(
        self,
        connection: apsw.Connection,
        query: Callable[Concatenate[apsw.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        try:
            return query(connection, *args, **kwargs)
        except apsw.Error as exc:
            error = store_error(exc, connection.filename)
            if connection is self._connection:  # the writer: the health monitor reports it
                self.refusals += 1
                self.last_refusal = error.message
            raise error from None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._connection.close()


def _checkpoint(connection: apsw.Connection) -> None:
    # PASSIVE: never waits for readers or the writer; what it cannot copy now is copied next time.
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
