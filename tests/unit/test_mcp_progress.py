"""MCP progress notifications: coalesced to at most one per interval, the phases that need a
person at once, none at all for a call without a progress token."""

from __future__ import annotations

import math

import trio
import trio.testing

from iris_mcp.progress import PROGRESS_INTERVAL_S, Coalescer, Said
from iris_mcp.progress_sender import open_progress


def test_at_most_one_message_per_interval_the_newest_held_and_the_urgent_at_once() -> None:
    coalescer = Coalescer(interval=0.25)
    assert coalescer.offer(Said("a"), now=0.0) == "a"  # the first goes at once
    assert coalescer.next_deadline() == math.inf  # nothing held
    assert coalescer.offer(Said("ab"), now=0.1) is None
    assert coalescer.offer(Said("abc"), now=0.2) is None  # replaces "ab": it says more
    assert coalescer.next_deadline() == 0.25
    assert coalescer.take_due(now=0.24) is None
    assert coalescer.take_due(now=0.25) == "abc"
    assert coalescer.take_due(now=0.3) is None and coalescer.next_deadline() == math.inf
    assert coalescer.offer(Said("abcd"), now=0.3) is None
    assert coalescer.offer(Said("beta: awaiting your approval", urgent=True), now=0.375) == (
        "beta: awaiting your approval"
    )
    assert coalescer.next_deadline() == math.inf  # the urgent one replaced what was held
    assert coalescer.offer(Said("abcde"), now=0.5) is None  # the interval counts from the urgent one
    assert coalescer.next_deadline() == 0.625
    assert coalescer.offer(Said("abcdef"), now=0.625) == "abcdef"


def test_the_first_interval_runs_from_the_calls_start() -> None:
    coalescer = Coalescer(interval=0.25, start=10.0)
    assert coalescer.offer(Said("queued for beta"), now=10.001) is None  # held: the call just began
    assert coalescer.offer(Said("a"), now=10.1) is None
    assert coalescer.next_deadline() == 10.25
    assert coalescer.offer(Said("beta: awaiting your approval", urgent=True), now=10.2) == (
        "beta: awaiting your approval"
    )
    assert coalescer.offer(Said("ab"), now=10.3) is None and coalescer.next_deadline() == 10.45


def test_at_most_four_a_second() -> None:
    assert PROGRESS_INTERVAL_S == 0.25


async def test_deltas_become_a_few_notifications_at_exact_times(autojump_clock: trio.testing.MockClock) -> None:
    sent: list[tuple[float, float, str]] = []

    async def report(progress: float, message: str) -> None:
        sent.append((trio.current_time(), progress, message))

    start = trio.current_time()
    text = ""
    async with open_progress(report) as progress:
        assert progress.wanted
        for delta in range(10):  # a delta every 40 ms: 0.00 .. 0.36
            text += str(delta)
            await progress.say(Said(text))
            await trio.sleep(0.04)
        await trio.sleep(0.6 - (trio.current_time() - start))
        await progress.say(Said("beta: awaiting your approval", urgent=True))  # at 0.60, not at 0.75
        await progress.say(Said("after"))  # held until 0.85, then the call ends first
        await trio.sleep(0.1)
    assert [(round(at - start, 6), number, message) for at, number, message in sent] == [
        (0.25, 1.0, "0123456"),  # what was said by then (the first interval runs from the call's start)
        (0.5, 2.0, "0123456789"),
        (0.6, 3.0, "beta: awaiting your approval"),
    ]
    await trio.sleep(1)
    assert len(sent) == 3  # what was held when the call ended is dropped: the result says more


async def test_a_call_answered_within_the_first_interval_sends_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    sent: list[str] = []

    async def report(progress: float, message: str) -> None:
        sent.append(message)

    async with open_progress(report) as progress:
        await progress.say(Said("queued for beta"))
        await trio.sleep(0.1)
        await progress.say(Said("beta is working on it"))
        await trio.sleep(0.1)
    await trio.sleep(1)
    assert sent == []


async def test_no_progress_token_no_notifications(autojump_clock: trio.testing.MockClock) -> None:
    async with open_progress(None) as progress:
        assert not progress.wanted
        await progress.say(Said("anything", urgent=True))
        assert progress.sent == 0
