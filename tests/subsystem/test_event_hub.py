"""The event hub on trio's virtual clock: a watcher wakes a few times a second, not at
every event published for others; a tell's few steps reach it as they happen; a watcher
of a few kinds (irisd's own: approvals, questions) is never woken by a tell's steps."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from irisd.events import FLUSH_INTERVAL_S, LOG_EVENTS, EventHub, EventLog, Published, serve_watch
from protocol.messages import ApprovalEvent, ApprovalInfo, Event, TellState, TellText


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


async def test_a_watcher_of_a_few_kinds_wakes_for_those_only_and_nobody_logs_a_tells_steps(
    autojump_clock: trio.abc.Clock,
) -> None:
    hub = EventHub()
    approval = ApprovalEvent(approval=ApprovalInfo(
        id="a-1", from_team=None, to_team="beta", tell_id="t", tool_name="Bash", input={}, status="pending",
        created_at=0.0, expires_at=60.0))
    batches: list[list[Event]] = []
    with hub.subscribe_kinds(ApprovalEvent) as approvals:

        async def watch() -> None:
            while batch := await approvals.wait_batch():
                batches.append(batch)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await trio.testing.wait_all_tasks_blocked()
            for _ in range(LOG_EVENTS * 3):  # a busy day of tells: never a wake-up, never behind
                hub.publish(TellText(tell_id="t", text="x"), "alpha", "beta")
                hub.publish(TellState(tell_id="t", status="running"), "alpha", "beta")
            await trio.testing.wait_all_tasks_blocked()
            assert batches == [] and hub.log.next == 0  # nobody watches everything: nothing kept
            hub.publish(approval, None, "beta")
            await trio.testing.wait_all_tasks_blocked()
            assert batches == [[approval]]
            hub.close()
    assert not approvals.dropped
    everything = hub.subscribe()
    assert everything.closed  # the hub closed: a new watcher ends at once
