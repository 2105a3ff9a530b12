"""The event hub on trio's virtual clock: a watcher wakes a few times a second, not at
every event published for others."""

from __future__ import annotations

import pytest
import trio

from irisd.events import FLUSH_INTERVAL_S, EventHub, EventLog, Published
from protocol.messages import Event, TellText


async def test_a_watcher_of_another_team_looks_a_few_times_a_second_not_at_every_delta(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = EventHub()
    reads = 0
    read = EventLog.read

    def counted(log: EventLog, cursor: int, wants: object) -> list[Event]:
        nonlocal reads
        reads += 1
        assert callable(wants)
        return read(log, cursor, wants)

    monkeypatch.setattr(EventLog, "read", counted)
    gamma = hub.subscribe("gamma")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(gamma.wait_batch)
        await trio.testing.wait_all_tasks_blocked()
        reads = 0
        for _ in range(200):
            hub.publish(TellText(tell_id="t", text="x"), "alpha", "beta")
            await trio.sleep(0.005)  # 200 deltas a second, for 1 s
        hub.close()
    assert reads <= 2 * (1.0 / FLUSH_INTERVAL_S + 1)  # two a wake-up; it was one a delta: 200


def test_published_carries_the_pair() -> None:
    assert Published(TellText(tell_id="t", text=""), None, "beta").to_team == "beta"
