"""The tell service in process (fake children, trio's autojump clock): who reads an answer,
where a refused nested tell is recorded, that a tell ends once, a reloaded question desk."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import FakeChild, child_got_turn
from fakes.core import no_events, running_core, teams_config
from harness import wait_until
from irisd.dispatch import Dispatcher
from irisd.events import EventHub
from irisd.questions.desk import QuestionDesk
from irisd.store import questions, tells
from irisd.store.db import open_database
from irisd.store.facade import Store
from irisd.tell.active import ActiveTell, end_tell, save_tell
from irisd.tell.machine import TellMachine
from protocol.errors import LoopError
from protocol.messages import Tell


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Dispatcher]:
    async with running_core(tmp_path, teams_config(tmp_path, "  maxProcesses: 2\n")) as dispatcher:
        yield dispatcher



async def pending_questions(core: Dispatcher) -> list[str]:
    return [q.tell_id for q in await core.store.call(questions.listing, None, False)]


async def test_a_reader_waiting_for_the_result_keeps_the_answer_from_becoming_a_question(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    read = await core.tells.tell(Tell(to_team="alpha", message="one", timeout_ms=-1), no_events)
    async with trio.open_nursery() as nursery:
        waited: list[str] = []

        async def wait_for_it() -> None:
            waited.append((await core.tells.get(read.tell.id, 60_000)).status)

        nursery.start_soon(wait_for_it)
        await trio.testing.wait_all_tasks_blocked()
        await (await child_got_turn(0)).result("Which branch should I use?")
    assert waited == ["completed"]

    unread = await core.tells.tell(Tell(to_team="alpha", message="two", timeout_ms=-1), no_events)
    child = FakeChild.instances[0]
    await wait_until(lambda: len(child.sent) >= 2, every=0.001)
    await child.result("Which branch should I use?")
    with trio.fail_after(60):
        await wait_until(lambda: pending_questions(core), every=0.01)  # looked at now and then, never waited for
    # Nobody read the second answer: a pending question. The first, read, made none.
    assert await pending_questions(core) == [unread.tell.id]


async def test_a_refused_loop_is_recorded_failed_in_its_chain(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    running = await core.tells.tell(Tell(to_team="alpha", message="root", timeout_ms=-1), no_events)
    await child_got_turn(0)
    with pytest.raises(LoopError, match=r"loop: alpha is already waiting in this chain \(external -> alpha -> alpha\)"):
        await core.tells.submit("alpha", "back to you", "beta", 0, parent_pair="external->alpha")
    stored = await core.store.call(tells.recent_all, "alpha", "beta", None, 10)
    assert [(t.status, t.chain_id, t.hops, t.message) for t in stored] == [
        ("failed", running.tell.chain_id, 1, "back to you")
    ]
    assert stored[0].error == "loop: alpha is already waiting in this chain (external -> alpha -> alpha)"
    assert stored[0].finished_at is not None
    nested = await core.tells.submit("beta", "a question", "alpha", -1, parent_pair="external->alpha")
    assert (nested.chain_id, nested.hops) == (running.tell.chain_id, 1)


async def test_a_reloaded_question_desk_reads_the_new_patterns(tmp_path: Path) -> None:
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    desk = QuestionDesk(config=teams_config(tmp_path, "  maxProcesses: 2\n"), store=store, hub=EventHub())
    assert desk.detector.detect("zzz now") is None
    desk.reconfigure(teams_config(tmp_path, "  maxProcesses: 2\n  questions:\n    patterns: ['zzz']\n"))
    found = desk.detector.detect("zzz now")
    assert found is not None and found.pattern == "zzz"
    store.close()


async def test_a_tell_ends_once_however_often_it_is_saved_or_ended(tmp_path: Path) -> None:
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    ended: list[tuple[str, bool, bool]] = []

    async def on_end(tell: ActiveTell) -> None:  # sees who waited: the waiters have not run yet
        ended.append((tell.machine.status, tell.replied.is_set(), tell.finished.is_set()))

    machine = TellMachine(response_timeout_s=1, caller_timeout_ms=0, now=trio.current_time())
    tell = ActiveTell(from_team=None, to_team="alpha", message="hi", machine=machine, on_end=on_end)
    await store.call(tells.insert, tell.info())
    await save_tell(store, tell)  # not final: saved, not ended
    assert ended == [] and not tell.finished.is_set()
    await end_tell(store, tell, "the pair stopped", interrupted=True)
    await end_tell(store, tell, "again")  # already ended: only saved
    await save_tell(store, tell)
    assert ended == [("interrupted", True, True)]
    stored = await store.call(tells.get, tell.id)
    assert stored is not None and (stored.status, stored.error) == ("interrupted", "the pair stopped")
    store.close()


async def test_a_cancel_says_whether_it_ended_the_tell(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    running = await core.tells.tell(Tell(to_team="alpha", message="long", timeout_ms=-1), no_events)
    await child_got_turn(0)
    first = await core.tells.cancel(running.tell.id)
    assert (first.cancelled, first.tell.status) == (True, "interrupted")
    again = await core.tells.cancel(running.tell.id)
    assert (again.cancelled, again.tell.status) == (False, "interrupted")  # it had ended before this one
    done = await core.tells.tell(Tell(to_team="alpha", message="short", timeout_ms=-1), no_events)
    # A new claude: the first ignored the interrupt, so it was stopped.
    told = await wait_until(lambda: [c for c in FakeChild.instances if "short" in str(c.sent)], every=0.001)
    await told[0].result("done")
    assert (await core.tells.get(done.tell.id, 60_000)).status == "completed"
    late = await core.tells.cancel(done.tell.id)
    assert (late.cancelled, late.tell.status) == (False, "completed")
