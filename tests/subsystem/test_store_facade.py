"""The store's two doors: small queries on the event loop, large reads and checkpoints in
the worker thread on a second connection (irisd/store/facade.py). Real SQLite files, the
real clock (a worker thread runs here)."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import trio

from irisd.store import facade
from irisd.store.facade import Store


def _thread_of(connection: apsw.Connection) -> int:
    return threading.get_ident()


def _insert(connection: apsw.Connection, n: int) -> None:
    with connection:
        connection.execute("CREATE TABLE IF NOT EXISTS t (x BLOB)")
        for _ in range(n):
            connection.execute("INSERT INTO t VALUES (?)", (b"x" * 4000,))


def _count(connection: apsw.Connection) -> int:
    row = connection.execute("SELECT count(*) FROM t").fetchone()
    return int(row[0]) if row else 0


async def test_small_queries_run_on_the_loop_and_large_reads_in_the_thread(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "iris.db")
    try:
        loop_thread = threading.get_ident()
        assert await store.call(_thread_of) == loop_thread
        assert await store.read(_thread_of) != loop_thread
        await store.call(_insert, 3)
        assert await store.read(_count) == 3  # the reader sees every committed write
    finally:
        store.close()


async def test_the_wal_is_checkpointed_off_the_loop_once_enough_is_committed(
    tmp_path: Path,
) -> None:
    store = await Store.open(tmp_path / "iris.db")
    checkpoints: list[int] = []
    checkpointed = threading.Event()
    real = facade._checkpoint

    def counted(connection: apsw.Connection) -> None:
        checkpoints.append(threading.get_ident())
        real(connection)
        checkpointed.set()

    facade._checkpoint = counted
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.serve_checkpoints)
            await store.call(_insert, 10)
            await trio.testing.wait_all_tasks_blocked()
            assert checkpoints == []  # 10 pages: not yet due
            await store.call(_insert, facade.CHECKPOINT_PAGES)
            assert await trio.to_thread.run_sync(checkpointed.wait, 60)
            assert checkpoints[0] != threading.get_ident()
            nursery.cancel_scope.cancel()
        assert await store.read(_count) == 10 + facade.CHECKPOINT_PAGES
    finally:
        facade._checkpoint = real
        store.close()
