"""The queue of writes the database refused: it reports recovering only after a failure."""

from __future__ import annotations

import logging
import math
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
