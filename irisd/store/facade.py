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

from irisd.store.db import open_database

P = ParamSpec("P")
T = TypeVar("T")


class Store:
    def __init__(self, connection: apsw.Connection) -> None:
        self._connection = connection
        self._limiter = trio.CapacityLimiter(1)

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

        Cancellation: the query still runs to the end (SQLite cannot be interrupted
        half-way safely); the caller just stops waiting for it.
        """

        def run() -> T:
            return query(self._connection, *args, **kwargs)

        return await trio.to_thread.run_sync(run, limiter=self._limiter, abandon_on_cancel=False)

    def call_nowait(
        self,
        query: Callable[Concatenate[apsw.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run a query inline: only for start-up and shutdown, when no thread may be used."""
        return query(self._connection, *args, **kwargs)

    def close(self) -> None:
        self._connection.close()
