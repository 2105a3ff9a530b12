"""The one door from the event loop to the database.

Every query is a small synchronous function taking the connection first; the async
``Store.call`` runs it in a worker thread, one at a time (an apsw connection must not
be used by two threads at once), so a slow query never stalls the trio loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import apsw
import trio

from irisd.store.db import open_database, store_error

P = ParamSpec("P")
T = TypeVar("T")


class Store:
    def __init__(self, connection: apsw.Connection, *, inline: bool = False) -> None:
        self._connection = connection
        self._limiter = trio.CapacityLimiter(1)
        # Inline runs queries on the event loop: only for tests on trio's autojump clock,
        # which would jump virtual time while a worker thread runs.
        self._inline = inline

    @classmethod
    async def open(cls, path: Path) -> Store:
        return cls(await trio.to_thread.run_sync(open_database, path))

    async def call(
        self,
        query: Callable[Concatenate[apsw.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``query(connection, *args, **kwargs)`` in the database thread.

        Raises StoreError (saying what to do) when the database fails: a full disk, a
        read-only file, an I/O error; the failing statement's transaction is rolled back.
        Cancellation: the query still runs to the end (SQLite cannot be interrupted
        half-way safely); the caller just stops waiting for it.
        """

        def run() -> T:
            try:
                return query(self._connection, *args, **kwargs)
            except apsw.Error as exc:
                raise store_error(exc, self._connection.filename) from None

        if self._inline:
            await trio.lowlevel.checkpoint()
            return run()
        return await trio.to_thread.run_sync(run, limiter=self._limiter, abandon_on_cancel=False)

    def close(self) -> None:
        self._connection.close()
