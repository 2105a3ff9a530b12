"""The pair actor's timing on trio's autojump clock, with a fake child: exact virtual
times for the response timeout, the caller's wait, interrupts, idle reaping, retries."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import FakeChild, child_got_turn
from fakes.core import no_events, running_core, teams_config
from harness import wait_until
from iris_common.config import IrisConfig
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.pool.pair_tells import HOLD_END_S
from protocol.errors import BusyError
from protocol.messages import Tell, TellReply


def config_for(tmp_path: Path, extra: str = "") -> IrisConfig:
    settings = f"  responseTimeout: 120000\n  queueLimit: 2\n{extra}"
    return teams_config(tmp_path, settings, alpha="    idleTimeout: 60000\n")


@pytest.fixture
async def core(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Dispatcher]:
    marker = request.node.get_closest_marker("settings")
    async with running_core(tmp_path, config_for(tmp_path, marker.args[0] if marker else "")) as dispatcher:
        yield dispatcher


class Caller:
    """Runs one tell in the background and records when its reply came."""

    def __init__(self) -> None:
        self.reply: TellReply | None = None
        self.replied_at: float | None = None
        self.error: Exception | None = None

    async def run(self, dispatcher: Dispatcher, request: Tell) -> None:
        try:
            self.reply = await dispatcher.tells.tell(request, no_events)
        except Exception as exc:
            self.error = exc
        self.replied_at = trio.current_time()



async def start_tell(
    nursery: trio.Nursery, core: Dispatcher, timeout_ms: int = 0, message: str = "hi"
) -> Caller:
    caller = Caller()
    nursery.start_soon(caller.run, core, Tell(to_team="alpha", message=message, timeout_ms=timeout_ms))
    await trio.testing.wait_all_tasks_blocked()
    return caller


async def test_response_timeout_restarts_on_every_line_then_stops_the_child(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core)
        child = await child_got_turn()
        t0 = trio.current_time()
        for offset in (10, 20, 45):
            await trio.sleep_until(t0 + offset)
            await child.text("x")
        await wait_until(lambda: caller.replied_at is not None, every=1)
    assert caller.reply is not None and caller.reply.status == "timed_out"
    assert caller.replied_at == pytest.approx(t0 + 45 + 120)
    assert child.stopped_at == pytest.approx(t0 + 165)
    assert caller.reply.tell.text == "xxx"  # the output so far is kept
    assert "120 s" in caller.reply.tell.error


async def test_caller_timeout_returns_partial_text_and_the_tell_runs_on(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """The seeds' example: caller 30 s, response 120 s; lines at 10, 20, 45; result at 50."""
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core, timeout_ms=30_000)
        child = await child_got_turn()
        t0 = trio.current_time()
        await trio.sleep_until(t0 + 10)
        await child.text("Let me ")
        await trio.sleep_until(t0 + 20)
        await child.text("check")
        await wait_until(lambda: caller.replied_at is not None, every=0.5)
        assert caller.replied_at == pytest.approx(t0 + 30)
        assert caller.reply is not None and caller.reply.status == "in_progress"
        assert caller.reply.tell.status == "running" and caller.reply.tell.text == "Let me check"
        tell_id = caller.reply.tell.id
        await trio.sleep_until(t0 + 45)
        await child.text(".")
        await trio.sleep_until(t0 + 50)
        await child.result("Done.")
        await trio.sleep(0.1)
    later = await core.tells.get(tell_id, 0)
    assert later.status == "completed" and later.tell.text == "Done."
    assert child.stopped_at == float("inf")  # the warm child lives on


async def test_the_answer_a_caller_waited_for_carries_the_tells_finish_time(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """The answer leaves before the tell's end is written: it still says when the tell ended."""
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core)
        child = await child_got_turn()
        await child.result("answer")
        await wait_until(lambda: caller.replied_at is not None, every=0.5)
    assert caller.reply is not None and caller.reply.status == "completed"
    tell = caller.reply.tell
    assert tell.finished_at is not None and tell.started_at is not None and tell.finished_at >= tell.started_at


async def test_async_caller_gets_the_id_at_once(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    reply = await core.tells.tell(Tell(to_team="alpha", message="later", timeout_ms=-1), no_events)
    assert trio.current_time() == t0
    assert reply.status == "in_progress" and reply.tell.id
    child = await child_got_turn()
    await child.result("answer")
    done = await core.tells.get(reply.tell.id, 5_000)
    assert done.status == "completed" and done.tell.text == "answer"


async def test_cancel_interrupts_through_the_child_then_stops_it_if_ignored(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core)
        child = await child_got_turn()
        assert caller.reply is None
        tell_id = core.supervisor.snapshots()[0].current.id  # type: ignore[union-attr]
        t0 = trio.current_time()
        cancelled = await core.tells.cancel(tell_id)
    assert child.sent[-1]["type"] == "control_request"
    assert child.sent[-1]["request"] == {"subtype": "interrupt"}
    assert cancelled.tell.status == "interrupted"
    assert child.stopped_at == pytest.approx(t0 + 5)  # it ignored the interrupt for 5 s


async def test_honoured_interrupt_keeps_the_child(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        await start_tell(nursery, core)
        child = await child_got_turn()
        tell_id = core.supervisor.snapshots()[0].current.id  # type: ignore[union-attr]

        async def honour() -> None:
            await wait_until(lambda: child.sent[-1]["type"] == "control_request", every=0.01)
            await trio.sleep(1)
            await child.result("", is_error=True, subtype="error_during_execution")

        nursery.start_soon(honour)
        t0 = trio.current_time()
        cancelled = await core.tells.cancel(tell_id)
        assert trio.current_time() == pytest.approx(t0 + 1, abs=0.05)
    assert cancelled.tell.status == "interrupted"
    assert child.stopped_at == float("inf")


async def test_idle_child_is_reaped_after_idle_timeout(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core)
        child = await child_got_turn()
        await child.result("ok")
        t_done = trio.current_time()
        await wait_until(lambda: caller.replied_at is not None, every=0.1)
    await wait_until(lambda: child.stopped_at != float("inf"), every=1)
    assert child.stopped_at == pytest.approx(t_done + 60)


async def test_tells_to_a_pair_run_in_order_and_the_queue_is_bounded(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        first = await start_tell(nursery, core, message="one")
        child = await child_got_turn()
        second = await start_tell(nursery, core, message="two")
        third = await start_tell(nursery, core, message="three")
        with pytest.raises(BusyError, match="queue of external->alpha is full"):
            await core.tells.tell(Tell(to_team="alpha", message="four"), no_events)
        assert [m["message"]["content"][0]["text"] for m in child.sent] == ["one"]  # type: ignore[index]
        for expected, caller in (("one", first), ("two", second), ("three", third)):
            await trio.sleep(1)
            assert child.sent[-1]["message"]["content"][0]["text"] == expected  # type: ignore[index]
            await child.result(f"re: {expected}")
            await wait_until(lambda c=caller: c.replied_at is not None, every=0.1)
            assert caller.reply is not None and caller.reply.tell.text == f"re: {expected}"


async def test_a_child_that_crashes_on_start_is_retried_with_backoff_then_failed(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        caller = await start_tell(nursery, core)
        for attempt in range(3):
            child = await child_got_turn(attempt)
            child.exit(1)
        await wait_until(lambda: caller.replied_at is not None, every=0.1)
    starts = [child.created_at for child in FakeChild.instances]
    assert [b - a for a, b in itertools.pairwise(starts)] == pytest.approx([0.25, 1.0], abs=0.002)
    assert caller.reply is not None and caller.reply.status == "failed"
    assert "keeps crashing on start (3 times)" in caller.reply.tell.error
    pair = next(iter(core.supervisor.pairs.values()))
    assert pair.state == "failed" and "crashing" in pair.reason
    # While failed, tells fail at once with the reason; 'wake' clears it.
    quick = await core.tells.tell(Tell(to_team="alpha", message="again"), no_events)
    assert quick.status == "failed" and "crashing" in quick.tell.error


async def test_a_tell_written_to_a_claude_that_died_unread_goes_to_a_new_one_and_a_turn_under_way_does_not(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """A claude killed while idle: the next tell may be written to it before its end is read.
    It printed nothing for that tell, so no turn (no tool) ran: the tell goes to a new claude.
    A claude that dies after printing a line of the turn ends its tell interrupted."""
    async with trio.open_nursery() as nursery:
        first = await start_tell(nursery, core, message="one")
        await (await child_got_turn(0)).result("re: one")
        await wait_until(lambda: first.replied_at is not None, every=0.1)
        second = await start_tell(nursery, core, message="two")
        await wait_until(lambda: len(FakeChild.instances[0].sent) == 2, every=0.01)
        FakeChild.instances[0].exit(-9)  # the turn written, nothing printed
        again = await child_got_turn(1)
        assert again.sent[-1]["message"]["content"][0]["text"] == "two"  # type: ignore[index]
        await again.text("re: t")
        again.exit(-9)
        await wait_until(lambda: second.replied_at is not None, every=0.1)
    assert first.reply is not None and first.reply.status == "completed"
    assert second.reply is not None and second.reply.status == "interrupted"
    assert second.reply.tell.text == "re: t" and len(FakeChild.instances) == 2


@pytest.mark.settings("  maxProcesses: 1\n")
async def test_a_full_pool_of_busy_processes_makes_a_tell_wait_never_evicting(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        await start_tell(nursery, core, message="long job")
        busy = await child_got_turn()
        t0 = trio.current_time()
        waiting = await core.tells.tell(Tell(to_team="beta", message="me too", timeout_ms=2000), no_events)
        assert trio.current_time() == pytest.approx(t0 + 2)
        assert waiting.status == "in_progress" and waiting.tell.status == "queued"
        assert "all 1 claude processes (maxProcesses) are busy" in waiting.tell.error
        assert busy.stopped_at == float("inf") and len(FakeChild.instances) == 1
        await busy.result("done")  # the busy pair goes idle: now it may be evicted
        second = await child_got_turn(1)
        assert busy.stopped_at < float("inf")
        await second.result("your turn")
        done = await core.tells.get(waiting.tell.id, 5000)
        assert done.tell.text == "your turn"


async def notify(core: Dispatcher, team: str, message: str) -> str:
    reply = await core.dispatch(Tell(to_team=team, message=message, persist=True), OWNER, no_events)
    return reply.notification.id  # type: ignore[union-attr]


async def sent_texts(child: FakeChild, count: int) -> list[str]:
    await wait_until(lambda: len(child.sent) >= count, every=0.01)
    return [m["message"]["content"][0]["text"] for m in child.sent]  # type: ignore[index]


async def test_notifications_of_one_pair_never_wait_for_another_and_failures_retry_later(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    from irisd.notifications import RETRY_AFTER_S
    from irisd.store import notifications

    slow_id = await notify(core, "alpha", "slow one")
    alpha = await child_got_turn(0)
    quick_id = await notify(core, "beta", "quick one")
    beta = await child_got_turn(1)  # delivered while alpha's is still running
    await beta.result("got it")
    await trio.sleep(0.1)
    assert (await core.store.call(notifications.get, quick_id)).status == "delivered"  # type: ignore[union-attr]

    await alpha.result("model overloaded", is_error=True)  # the delivery fails...
    failed_at = trio.current_time()
    assert await sent_texts(alpha, 2) == ["slow one", "slow one"]  # ... and is retried
    assert trio.current_time() == pytest.approx(failed_at + RETRY_AFTER_S, abs=0.1)
    await alpha.result("done")
    await trio.sleep(0.1)
    assert (await core.store.call(notifications.get, slow_id)).status == "delivered"  # type: ignore[union-attr]


async def test_requests_to_a_pair_whose_actor_ended_are_answered_never_left_waiting(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    from irisd.pool.pair import Pair
    from irisd.pool.pair_events import WakeRequest

    supervisor = core.supervisor
    config = core.current.config
    pair = Pair(from_team=None, team=config.team("alpha"), config=config, paths=supervisor.paths,
                store=core.store, child_factory=FakeChild)
    left_in_inbox = WakeRequest()
    async with trio.open_nursery() as nursery:
        await nursery.start(pair.run)
        pair.inbox.post(left_in_inbox)  # posted, but the actor ends before it reads it
        nursery.cancel_scope.cancel()
    assert left_in_inbox.done.is_set() and left_in_inbox.error is not None  # answered, not left waiting
    started = trio.current_time()
    with pytest.raises(BusyError, match="stopped while this was on its way; send it again"):
        await pair.wake()
    assert trio.current_time() == started  # at once


async def test_the_next_notification_of_a_pair_goes_at_once_after_the_answer(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """The courier delivers a pair's notifications in order, each once the last one's end is
    written: that end is written at once, not held for a next tell (which is the courier's
    own, waiting for it)."""
    await notify(core, "alpha", "first")
    await notify(core, "alpha", "second")
    alpha = await child_got_turn(0)
    await alpha.result("got the first")
    answered = trio.current_time()
    await wait_until(lambda: len(alpha.sent) >= 2, every=0.0005)
    assert trio.current_time() - answered < HOLD_END_S / 2
    assert await sent_texts(alpha, 2) == ["first", "second"]
