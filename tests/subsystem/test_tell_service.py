"""The tell service in process (fake children, trio's autojump clock): who reads an answer,
where a refused nested tell is recorded, that a tell ends once, a reloaded question desk."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from fakes.child import FakeChild, child_got_turn
from fakes.core import no_events, running_core, teams_config
from harness import wait_until
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.events import EventHub
from irisd.questions.desk import QuestionDesk
from irisd.store import ledger, notifications, questions, tells
from irisd.store.db import open_database
from irisd.store.facade import Store
from irisd.tell.active import ActiveTell, end_tell, save_tell
from irisd.tell.machine import TellMachine
from protocol.errors import LoopError, NotFoundError
from protocol.messages import ChainRef, GetTell, NotificationInfo, NotificationReply, Tell, TellInfo


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


async def test_a_stored_tell_keeps_its_chain_and_two_teams_storing_tells_for_each_other_stop_at_the_hop_limit(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running_core(tmp_path, teams_config(tmp_path, "  maxProcesses: 3\n  hopLimit: 1\n")) as core:
        root = await core.tells.tell(Tell(to_team="alpha", message="root", timeout_ms=-1), no_events)
        await child_got_turn(0)
        ping = Tell(to_team="beta", message="ping", from_team="alpha", parent_pair="external->alpha", persist=True)
        stored = await core.dispatch(ping, OWNER, no_events)
        assert isinstance(stored, NotificationReply)
        assert stored.notification.chain == ChainRef(chain_id=root.tell.chain_id, hops=0, path=["alpha"])
        await child_got_turn(1)  # delivered to beta: hop 1 of alpha's chain
        (delivered,) = await core.store.call(tells.recent_all, "beta", "alpha", None, 10)
        assert (delivered.kind, delivered.chain_id, delivered.hops) == ("notification", root.tell.chain_id, 1)
        # beta stores a tell back for alpha while answering: hop 2, past the limit.
        pong = Tell(to_team="alpha", message="pong", from_team="beta", parent_pair="alpha->beta", persist=True)
        problem = "this tell would be hop 2 of a chain of nested tells; the limit is 1"
        with pytest.raises(LoopError, match=f"^{problem}; answer from what you know instead of asking alpha$"):
            await core.dispatch(pong, OWNER, no_events)
        (refused,) = await core.store.call(tells.recent_all, "alpha", "beta", None, 10)
        assert (refused.status, refused.kind, refused.chain_id, refused.hops, refused.error) == (
            "failed", "notification", root.tell.chain_id, 2, problem
        )
        assert [n.message for n in await core.store.call(notifications.pending)] == ["ping"]  # pong: not stored


async def test_a_stored_tell_to_its_own_sender_is_refused(core: Dispatcher) -> None:
    to_itself = Tell(to_team="alpha", message="note to self", from_team="alpha", persist=True)
    with pytest.raises(LoopError, match=r"^alpha cannot store a tell for itself \(persist\)"):
        await core.dispatch(to_itself, OWNER, no_events)
    assert await core.store.call(notifications.listing, None, True) == []


async def test_a_stored_tell_whose_chain_went_too_far_is_refused_at_delivery_for_good(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    # Stored at hop 4 of a chain (hop limit 4): delivering it would be hop 5.
    chain = ChainRef(chain_id="c-far", hops=4, path=["alpha"])
    stored = await core.store.call(notifications.create, "alpha", "beta", "ping", time.time(), 3600.0, chain)
    core.on_notification()
    with trio.fail_after(60):
        async def settled() -> NotificationInfo | None:
            found = await core.store.call(notifications.get, stored.id)
            return found if found is not None and found.status != "pending" else None

        found = await wait_until(settled, every=0.01)
    problem = "this tell would be hop 5 of a chain of nested tells; the limit is 4"
    assert found is not None and (found.status, found.error) == (
        "refused", f"{problem}; answer from what you know instead of asking beta"
    )
    (refused,) = await core.store.call(tells.recent_all, "beta", "alpha", None, 10)
    assert (refused.status, refused.kind, refused.chain_id, refused.hops, refused.error) == (
        "failed", "notification", "c-far", 5, problem
    )
    await trio.sleep(3600)  # never tried again
    assert FakeChild.instances == [] and (await core.store.call(notifications.get, stored.id)) == found


async def test_a_stored_tell_waits_while_its_chain_has_spent_its_budget(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    settings = "  maxProcesses: 2\n  budget:\n    chainUsd: 0.5\n"
    async with running_core(tmp_path, teams_config(tmp_path, settings)) as core:
        spent = TellInfo(id="t-1", from_team=None, to_team="alpha", message="x", status="completed",
                         chain_id="c-1", finished_at=time.time(), cost_usd=0.5)
        await core.store.call(ledger.record, spent)
        chain = ChainRef(chain_id="c-1", hops=1, path=["alpha"])
        stored = await core.store.call(notifications.create, "alpha", "beta", "ping", time.time(), 3600.0, chain)
        core.on_notification()
        with trio.fail_after(60):
            async def refused() -> NotificationInfo | None:
                found = await core.store.call(notifications.get, stored.id)
                return found if found is not None and found.error else None

            found = await wait_until(refused, every=0.01)
        assert found.status == "pending"
        assert found.error.startswith("not sent: this chain of nested tells has spent $0.5, reaching its budget")
        assert FakeChild.instances == []  # not delivered: raising chainUsd (and 'iris reload') lets it go


async def test_a_question_a_waiting_caller_read_is_recorded_once_when_it_answers(tmp_path: Path) -> None:
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    desk = QuestionDesk(config=teams_config(tmp_path), store=store, hub=EventHub())
    asked = TellInfo(id="t-asked", from_team="a2a:far", to_team="alpha", message="deploy", status="completed",
                     text="Built it. Shall I deploy it now?", session_id="s-1")
    first = await desk.file_answered_now(asked)
    assert first is not None and first.tell_id == "t-asked" and "Shall I deploy it now?" in first.question
    again = await desk.file_answered_now(asked)  # a second answer finds the same question, not a new one
    assert again is not None and again.id == first.id
    assert await store.call(questions.listing, None, True, "") == [first]
    plain = msgspec.structs.replace(asked, id="t-plain", text="Deployed.")
    assert await desk.file_answered_now(plain) is None  # asked nothing
    assert await desk.file_answered_now(msgspec.structs.replace(asked, id="t-run", status="running")) is None
    store.close()


async def test_the_id_of_a_stored_tell_asked_for_as_a_tell_says_where_it_is(core: Dispatcher) -> None:
    """'iris tell --persist' prints an n-... id; 'iris result' of it said only "no tell with
    id", and pointed at the report, where a stored tell is not."""
    stored = await core.dispatch(Tell(to_team="alpha", message="later", persist=True), OWNER, no_events)
    assert isinstance(stored, NotificationReply)
    with pytest.raises(NotFoundError) as missing:
        await core.dispatch(GetTell(tell_id=stored.notification.id), OWNER, no_events)
    assert missing.value.message == (
        f"no tell with id {stored.notification.id!r}; it is a stored tell's (--persist): "
        "'iris notifications --all' shows it and the tell that delivered it"
    )
