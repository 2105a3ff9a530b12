"""The queue of writes the database refused: it reports recovering only after a failure."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any, cast

import pytest
import trio

from irisd.store.db import StoreError
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites


class FlakyStore:
    """Refuses the first ``failures`` writes, then takes them; records what it took."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.written: list[object] = []

    async def call(self, query: Any, *args: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreError("the disk is full")
        self.written.append(args)


class Gate:
    """A store whose writes wait until the test opens it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.entered, self.opened = trio.Event(), trio.Event()

    async def call(self, query: Any, *args: Any) -> Any:
        self.entered.set()
        await self.opened.wait()
        return await self.store.call(query, *args)


def recovery_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "takes writes again" in r.getMessage()]


def test_a_last_try_with_nothing_waiting_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A pair's end tries what waits once more: with nothing waiting it says nothing (every
    pair logged "the database takes writes again" at every stop of irisd)."""
    writes = PendingWrites(cast(Store, FlakyStore(failures=0)), owner="external->api")
    caplog.set_level(logging.INFO, logger="irisd.store")

    trio.run(writes.retry, math.inf)

    assert recovery_lines(caplog) == []


def test_after_a_refused_write_the_retry_saves_it_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore(failures=1)
    writes = PendingWrites(cast(Store, store), owner="external->api")
    caplog.set_level(logging.INFO, logger="irisd.store")

    async def main() -> None:
        assert await writes.save("state", lambda connection: None, "row") is False
        await writes.retry(math.inf)

    trio.run(main)

    assert store.written == [("row",)]
    assert len(writes) == 0
    assert recovery_lines(caplog) == ["the database takes writes again; saved what waited"]


def write(db: Any, value: str) -> None:
    db.execute("INSERT INTO written VALUES (?)", (value,))


def database(tmp_path: Any) -> tuple[Store, list[int], Callable[[], list[str]]]:
    """A store with a table ``written``, the commits made to it, and its rows."""
    from irisd.store.db import open_database

    connection = open_database(tmp_path / "iris.db")
    connection.execute("CREATE TABLE written (value TEXT)")
    commits: list[int] = []

    def committing() -> bool:
        commits.append(1)
        return False

    connection.set_commit_hook(committing)

    def rows() -> list[str]:
        return [value for (value,) in connection.execute("SELECT value FROM written")]

    return Store(connection, inline=True), commits, rows


def test_a_batch_is_one_transaction_at_its_end_and_a_refused_one_waits_in_order(tmp_path: Any) -> None:
    store, commits, rows = database(tmp_path)
    writes = PendingWrites(store, owner="external->api")

    async def main() -> None:
        async with writes.batch():
            await writes.save(None, write, "a")
            async with writes.batch():  # joins the outer one
                await writes.save("key", write, "b")
            assert rows() == [] and commits == []  # not yet
        assert rows() == ["a", "b"] and len(commits) == 1
        with trio.CancelScope() as scope:
            async with writes.batch():
                await writes.save(None, write, "c")
                scope.cancel()
                await trio.sleep(1)
        assert rows() == ["a", "b", "c"]  # cancelled, the batch is written all the same
        gate = Gate(store)
        writes.store = cast(Store, gate)

        async def batch_of_d() -> None:
            async with writes.batch():
                await writes.save(None, write, "d")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(batch_of_d)
            await gate.entered.wait()  # the batch's flush waits its turn...
            await writes.save(None, write, "e")  # ... as another task saves: it joins the batch
            gate.opened.set()
        assert rows() == ["a", "b", "c", "d", "e"]  # not lost
        refusing = FlakyStore(failures=1)
        writes.store = cast(Store, refusing)
        async with writes.batch():
            await writes.save(None, write, "f")
            await writes.save(None, write, "g")
        assert len(writes) == 2  # refused: both wait, in order
        await writes.retry(math.inf)
        assert refusing.written == [("f",), ("g",)] and len(writes) == 0

    trio.run(main)


def test_a_held_batch_goes_with_the_next_one_or_alone_once_its_time_has_passed(tmp_path: Any) -> None:
    """``hold``: a tell's end waits for the start of a tell sent right after its answer (one
    commit for both), or for the owner's timer; what follows it runs once it is written."""
    store, commits, rows = database(tmp_path)
    writes = PendingWrites(store, owner="external->api")
    followed: list[list[str]] = []

    async def follow() -> None:
        followed.append(rows())

    async def main() -> None:
        async with writes.batch():
            await writes.save(None, write, "end of one")
            writes.hold(0.01, follow)
        assert rows() == [] and followed == [] and writes.next_deadline() == pytest.approx(trio.current_time() + 0.01)
        async with writes.batch():
            await writes.save(None, write, "start of two")
        assert rows() == ["end of one", "start of two"] and len(commits) == 1  # one commit for both
        assert followed == [["end of one", "start of two"]] and writes.next_deadline() == math.inf
        async with writes.batch():
            await writes.save(None, write, "end of two")
            writes.hold(0.01, follow)
        await writes.retry(trio.current_time())  # its time has not come
        assert rows() == ["end of one", "start of two"]
        await writes.retry(trio.current_time() + 0.01)  # none came in time: written alone
        assert rows()[-1] == "end of two" and len(commits) == 2 and len(followed) == 2
        async with writes.batch():  # nothing to write: what follows runs at the timer all the same
            writes.hold(0.01, follow)
        await writes.retry(math.inf)
        assert len(followed) == 3 and len(commits) == 2

    trio.run(main)
