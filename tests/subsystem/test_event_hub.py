"""The event hub on trio's virtual clock: a watcher wakes a few times a second, not at
every event published for others; a tell's few steps reach it as they happen."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from irisd.events import FLUSH_INTERVAL_S, EventHub, EventLog, Published, serve_watch
from protocol.messages import Event, TellState, TellText


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


async def test_a_warm_tells_steps_reach_a_watcher_as_they_happen_not_a_quarter_second_apart(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The A2A face and the mesh's live view follow a tell to its end through a watch: its
    end came FLUSH_INTERVAL_S after its first step, whenever the tell ended."""
    hub = EventHub()
    got: list[tuple[float, str]] = []

    async def send_event(event: Event) -> None:
        got.append((trio.current_time(), type(event).__name__))

    steps: list[Event] = [TellState(tell_id="t", status="queued", to_team="beta"),
                          TellState(tell_id="t", status="running", to_team="beta"),
                          TellText(tell_id="t", text="hi"),
                          TellState(tell_id="t", status="completed", to_team="beta")]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_watch, hub, "beta", send_event)
        await trio.testing.wait_all_tasks_blocked()
        started = trio.current_time()
        for step in steps:
            hub.publish(step, None, "beta")
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert got[0][1] == "Watching"
    assert [(round(at - started, 3), name) for at, name in got[1:]] == [
        (0.0, "TellState"), (0.01, "TellState"), (0.02, "TellText"), (0.03, "TellState"),
    ]
