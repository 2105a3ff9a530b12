"""A tell's transcript is written per turn: its lines in one write with its state, no
token deltas, claude's ``init`` line once per claude (again when it changes); a long
turn is written at least every ``SAVE_AFTER_S``; the answer leaves before the end is
written (fake children on trio's autojump clock, the real core and store)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from fakes.child import FakeChild
from fakes.child import child_got_turn as child
from fakes.core import no_events, note_commits, past_the_hold, running_core, teams_config
from irisd.caller import Caller
from irisd.dispatch import Dispatcher
from irisd.store import lines, sessions, tells
from irisd.tell.transcript import SAVE_AFTER_S, Inits, TurnLines, not_stored
from protocol.messages import (
    Event,
    GetTell,
    ListSessions,
    ListTells,
    ReadTranscript,
    ReportReply,
    SessionsReply,
    Sleep,
    Tell,
    TellReply,
    TranscriptPage,
    TranscriptReply,
)

INIT = {"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": ["Bash"] * 200}


def test_turn_lines_keep_all_but_token_deltas_until_taken() -> None:
    lines = TurnLines()
    assert lines.next_deadline() == float("inf") and not lines.due(100.0)
    lines.add(10.0, 1.0, "system", b"{init}")
    lines.add(10.1, 1.1, "stream_event", b"{delta}")  # changes the text, not stored
    lines.add(10.2, 1.2, "system", b"{same init}", keep=False)
    lines.add(10.3, 1.3, "assistant", b"{a}")
    assert len(lines) == 2 and lines.next_deadline() == 10.0 + SAVE_AFTER_S
    assert not lines.due(10.0 + SAVE_AFTER_S - 0.01) and lines.due(10.0 + SAVE_AFTER_S)
    taken = lines.take()
    assert taken == [(1.0, "system", b"{init}"), (1.3, "assistant", b"{a}")]
    assert lines.next_deadline() == float("inf")
    lines.add(11.0, 2.0, "result", b"{r}")
    assert lines.unwritten() == [*taken, (2.0, "result", b"{r}")]  # taken, not written yet: still shown
    lines.written(len(taken))
    assert lines.unwritten() == [(2.0, "result", b"{r}")]
    # a reader that found the taken lines in the database already does not show them twice
    assert not_stored([(1.3, "assistant")], [(1.3, "assistant", b"{a}"), (2.0, "result", b"{r}")]) == [
        (2.0, "result", b"{r}")
    ]


def test_an_init_line_is_new_once_per_claude_and_when_it_changes() -> None:
    inits = Inits()
    first = json.dumps({**INIT, "uuid": "u1"}).encode()
    assert inits.is_new(first)
    assert not inits.is_new(json.dumps({**INIT, "uuid": "u2"}).encode())  # the same but for its uuid
    assert inits.is_new(json.dumps({**INIT, "model": "other", "uuid": "u3"}).encode())
    inits.new_child()
    assert inits.is_new(first)


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Dispatcher]:
    async with running_core(tmp_path, teams_config(tmp_path)) as dispatcher:
        yield dispatcher


def stored(core: Dispatcher, tell_id: str) -> list[str]:
    return [kind for _, kind, _ in tells.messages(core.store._connection, tell_id)]


async def turn(claude: FakeChild, uuid: str, answer: str, **init: Any) -> None:
    await claude.emit({**INIT, **init, "uuid": uuid})
    for word in answer.split():
        await claude.text(word + " ")
    await claude.emit({"type": "assistant", "message": {"content": [{"type": "text", "text": answer}]}})


async def test_a_turn_is_written_once_with_its_state_without_deltas_or_a_repeated_init(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    replies: list[TellReply] = []

    async def tell(message: str) -> None:
        replies.append(await core.tells.tell(Tell(to_team="alpha", message=message), no_events))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "one")
        claude = await child(0)
        await turn(claude, "u1", "the first answer")
        await trio.testing.wait_all_tasks_blocked()
        running = next(iter(core.supervisor.pairs.values())).tells.by_id
        (tell_id,) = running
        assert stored(core, tell_id) == []  # kept in memory until the turn's state is saved
        shown = await core.dispatch(ReadTranscript(tell_id=tell_id), Caller(), no_events)
        assert isinstance(shown, TranscriptReply)  # a reader sees them all the same
        assert [e.type for e in shown.entries] == ["system", "assistant"]
        await claude.result("the first answer")
        await trio.testing.wait_all_tasks_blocked()
        shown = await core.dispatch(ReadTranscript(tell_id=tell_id), Caller(), no_events)
        assert isinstance(shown, TranscriptReply)  # its end held for a next tell: a reader sees it whole
        assert [e.type for e in shown.entries] == ["system", "assistant", "result"]
        assert shown.tell.status == "completed"
        await past_the_hold()  # none came: written alone
        assert stored(core, tell_id) == ["system", "assistant", "result"]  # no stream_event

        nursery.start_soon(tell, "two")
        await trio.testing.wait_all_tasks_blocked()
        await turn(claude, "u2", "again")  # the same init line, a new uuid: not kept
        await claude.result("again")
        await past_the_hold()
        second = replies[-1].tell.id
        assert stored(core, second) == ["assistant", "result"]

        nursery.start_soon(tell, "three")
        await trio.testing.wait_all_tasks_blocked()
        await turn(claude, "u3", "changed", model="another")  # a changed init line is kept
        await claude.result("changed")
    await past_the_hold()  # the pair's actor writes the end after the answer left
    assert stored(core, replies[-1].tell.id) == ["system", "assistant", "result"]
    final = await core.dispatch(ReadTranscript(tell_id=replies[0].tell.id, steps=True), Caller(), no_events)
    assert isinstance(final, TranscriptReply)
    assert [s.kind for s in final.steps] == ["start", "text", "end"]


async def test_a_long_turn_is_written_at_least_every_half_second_with_its_text_so_far(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(core.tells.tell, Tell(to_team="alpha", message="long"), no_events)
        claude = await child(0)
        await claude.emit({**INIT, "uuid": "u1"})
        await claude.text("word1 ")
        await trio.testing.wait_all_tasks_blocked()
        pair = next(iter(core.supervisor.pairs.values()))
        (tell_id,) = pair.tells.by_id
        start = trio.current_time()
        assert stored(core, tell_id) == []
        await trio.sleep(SAVE_AFTER_S - 0.01)
        await trio.testing.wait_all_tasks_blocked()
        assert stored(core, tell_id) == []
        await trio.sleep(0.01)  # the pair's timer: the oldest unsaved change is SAVE_AFTER_S old
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() - start == pytest.approx(SAVE_AFTER_S)
        assert stored(core, tell_id) == ["system"]
        info = await core.store.call(tells.get, tell_id)
        assert info is not None and info.text == "word1 "  # the text so far, for a crash of irisd
        await claude.text("word2")
        await claude.result("word1 word2")


async def test_the_answer_leaves_before_the_end_is_written(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    replied: list[TellReply] = []
    saved_when: list[tuple[str, int]] = []  # each save of the tell: its status, how many replies had gone
    update = tells.update

    def spying(db: Any, info: Any, usage: bytes | None = None) -> None:
        saved_when.append((info.status, len(replied)))
        update(db, info, usage)

    monkeypatch.setattr(tells, "update", spying)

    async def tell() -> None:
        replied.append(await core.tells.tell(Tell(to_team="alpha", message="hi"), no_events))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell)
        claude = await child(0)
        await turn(claude, "u1", "hello")
        await claude.result("hello")
    await past_the_hold()  # the pair's actor writes the end (held for a next tell that did not come)
    assert replied and replied[0].tell.status == "completed"
    assert saved_when[-1] == ("completed", 1)  # the caller had its answer when the end was written
    assert await core.store.call(tells.get, replied[0].tell.id) is not None


async def test_a_running_tell_read_in_pages_while_it_writes_shows_each_line_once(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two lines (or the row that takes a page past two: the five lines written at
    once); the reader holds its first page while the tell writes the lines it kept in memory
    into the row that page ended in: the next page reads them from that row, the lines still
    in memory at the end come after the last page, each line once, in order."""
    monkeypatch.setattr(lines, "PAGE_LINES", 2)
    words = [f"w{n}" for n in range(9)]

    async def say(claude: FakeChild, some: list[str]) -> None:
        for word in some:
            await claude.emit({"type": "assistant", "message": {"content": [{"type": "text", "text": word}]}})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(core.tells.tell, Tell(to_team="alpha", message="long"), no_events)
        claude = await child(0)
        await say(claude, words[:5])
        await trio.sleep(SAVE_AFTER_S * 2)  # written: five lines in the database
        (tell_id,) = next(iter(core.supervisor.pairs.values())).tells.by_id
        await say(claude, words[5:7])  # in memory
        assert len(stored(core, tell_id)) == 5
        holding, pages = trio.Event(), []

        async def reader(event: Event) -> None:
            assert isinstance(event, TranscriptPage)
            pages.append([json.loads(e.raw)["message"]["content"][0]["text"] for e in event.entries])
            if len(pages) == 1:
                await holding.wait()

        async def read() -> None:
            await core.dispatch(ReadTranscript(tell_id=tell_id, paged=True), Caller(), reader)

        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(SAVE_AFTER_S * 2)  # the tell writes w5 and w6 while the reader holds
        assert len(stored(core, tell_id)) == 7
        await say(claude, words[7:])  # in memory again
        holding.set()
        await trio.testing.wait_all_tasks_blocked()
        assert pages == [["w0", "w1", "w2", "w3", "w4"], ["w5", "w6"], ["w7", "w8"]]
        await claude.result("done")


def recording(
    core: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[TellReply], Callable[[str], Awaitable[None]]]:
    """What happens, in order ("turn": a turn written to claude, "reply STATUS": a caller
    answered; with ``committed``, "commit"), the replies, and a caller that tells alpha."""
    happened: list[str] = []
    replies: list[TellReply] = []
    sending = FakeChild.send

    async def send(self: FakeChild, data: bytes) -> None:
        happened.append("turn")
        await sending(self, data)

    monkeypatch.setattr(FakeChild, "send", send)

    async def tell(message: str) -> None:
        replies.append(await core.tells.tell(Tell(to_team="alpha", message=message), no_events))
        happened.append(f"reply {replies[-1].status}")

    return happened, replies, tell


async def warm_claude(tell: Callable[[str], Awaitable[None]]) -> FakeChild:
    """Alpha's claude, started by a first tell, answered, its end written."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "one")
        claude = await child(0)
        await claude.result("first")
    await past_the_hold()
    return claude


async def test_a_warm_tell_goes_to_claude_before_its_start_is_written_and_ends_in_one_transaction(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an idle claude: the tell's row, then its turn to claude, then the tell's start in
    one commit; at the result, the exchange, the transcript and the end in one commit (7
    commits a tell before, 3 of them ahead of the turn; then 4, the pair's idle <-> processing
    each its own at the end), held ``HOLD_END_S`` for a next tell's start (the next test).
    The stored pair state changes only as its claude starts and stops."""
    happened, replies, tell = recording(core, monkeypatch)
    note_commits(core, happened)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "one")  # starts the claude
        claude = await child(0)
        await claude.result("first")
    await trio.testing.wait_all_tasks_blocked()
    happened.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "two")
        await trio.testing.wait_all_tasks_blocked()
        assert happened == ["commit", "turn", "commit"]
        happened.clear()
        await turn(claude, "u2", "the second answer")
        assert happened == []  # nothing written during the turn
        await claude.result("the second answer")
    await trio.testing.wait_all_tasks_blocked()
    assert happened == ["reply completed"]  # its end held for a tell sent right after
    await past_the_hold()
    assert happened == ["reply completed", "commit"]  # none came: written alone
    row = await core.store.call(tells.get, replies[-1].tell.id)
    (pair,) = await core.store.call(sessions.list_all)
    assert pair.process_state != "stopped"  # a claude runs: a start after a crash resets it
    await core.pairs.sleep(Sleep(to_team="alpha"))
    (pair,) = await core.store.call(sessions.list_all)
    assert pair.process_state == "stopped"
    assert row is not None and row.status == "completed" and row.text == "the second answer"
    assert stored(core, row.id) == ["system", "assistant", "result"]


async def test_a_tell_sent_right_after_an_answer_goes_to_claude_before_the_end_is_written(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back to back: the end of one tell and the start of the next in one commit, after the
    next turn went to claude; until then the first is found as it ended (``iris result``)."""
    happened, replies, tell = recording(core, monkeypatch)

    claude = await warm_claude(tell)
    note_commits(core, happened)
    happened.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "two")
        await trio.testing.wait_all_tasks_blocked()
        await claude.result("second")
        await trio.testing.wait_all_tasks_blocked()
        assert happened == ["commit", "turn", "commit", "reply completed"]  # its row, its turn, its start
        first = replies[-1].tell.id
        found = await core.dispatch(GetTell(tell_id=first), Caller(), no_events)
        assert isinstance(found, TellReply) and found.tell.status == "completed"  # held, found as it ended
        nursery.start_soon(tell, "three")  # at once, as a client that had its answer
        await trio.testing.wait_all_tasks_blocked()
        # its row, its turn, then the end of "two" and the start of "three" in one commit
        assert happened == ["commit", "turn", "commit", "reply completed", "commit", "turn", "commit"]
        assert (await core.store.call(tells.get, first)).status == "completed"  # type: ignore[union-attr]
        await claude.result("third")
    await trio.testing.wait_all_tasks_blocked()
    assert happened[-1] == "reply completed"  # the end of "three" is held...
    listed = await core.dispatch(ListSessions(to_team="alpha"), Caller(), no_events)
    assert happened[-1] == "commit"  # ... and written before a reader of the database reads
    assert isinstance(listed, SessionsReply) and [s.message_count for s in listed.sessions] == [3]


async def test_a_tell_whose_end_is_awaited_has_it_written_as_the_answer_leaves(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mesh home says, once its tell is queued, that it will wait for the end
    (``end_awaited``): the pair writes it with the answer, not held for a next tell and
    then written when the home asks (one trip through the pair's inbox on the way of the
    final result)."""
    _, _, tell = recording(core, monkeypatch)
    claude = await warm_claude(tell)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "two")
        await trio.testing.wait_all_tasks_blocked()
        listed = await core.dispatch(ListTells(to_team="alpha", status="running"), Caller(), no_events)
        assert isinstance(listed, ReportReply)
        (running,) = listed.tells
        core.tells.end_awaited(running.id)
        await claude.result("second")
        await trio.testing.wait_all_tasks_blocked()
        assert not core.supervisor.pairs[(None, "alpha", "")].writes.holding
        row = await core.store.call(tells.get, running.id)
        assert row is not None and row.status == "completed"


@pytest.mark.parametrize("who", ["a reader while it runs", "its caller once answered", "a reader once it is held"])
async def test_the_end_of_a_tell_somebody_waits_to_see_written_is_not_held(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch, who: str
) -> None:
    """``iris result --wait``, the A2A face, a mesh home, a cancel: each acts on the end once
    it is written, so a tell one of them waits for is written at once, not held
    ``HOLD_END_S`` for a next tell that may never come; one held before the reader came is
    written as it comes."""
    _, _, tell = recording(core, monkeypatch)
    claude = await warm_claude(tell)
    written: list[float] = []
    replies: list[TellReply] = []

    async def two() -> None:
        replies.append(await core.tells.tell(Tell(to_team="alpha", message="two"), no_events))
        if who == "its caller once answered":  # as a mesh home does before its final result
            await core.tells.end_written(replies[0].tell.id)
            written.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(two)
        await trio.testing.wait_all_tasks_blocked()
        if who == "a reader while it runs":
            listed = await core.dispatch(ListTells(to_team="alpha", status="running"), Caller(), no_events)
            assert isinstance(listed, ReportReply)
            (running,) = listed.tells

            async def reader() -> None:
                await core.dispatch(GetTell(tell_id=running.id, wait_ms=60_000), Caller(), no_events)
                written.append(trio.current_time())

            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
        answered = trio.current_time()
        await claude.result("second")
    if who == "a reader once it is held":
        await trio.testing.wait_all_tasks_blocked()
        assert core.supervisor.pairs[(None, "alpha", "")].writes.holding  # nobody waited: held
        await core.tells.end_written(replies[0].tell.id)
        written.append(trio.current_time())
    assert written == [answered]  # no virtual time passed: not held, or no longer
    row = await core.store.call(tells.get, replies[0].tell.id)
    assert row is not None and row.status == "completed"


async def test_a_reader_has_only_its_own_tells_pair_write_what_it_holds(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """Waiting for one tell's end writes what that tell's pair holds, not what other pairs
    hold for their next tells."""
    replies: dict[str, TellReply] = {}

    async def tell(team: str) -> None:
        replies[team] = await core.tells.tell(Tell(to_team=team, message="one"), no_events)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tell, "alpha")
        alpha = await child(0)
        nursery.start_soon(tell, "beta")
        beta = await child(1)
        await alpha.result("from alpha")
        await beta.result("from beta")
    await trio.testing.wait_all_tasks_blocked()
    pairs = core.supervisor.pairs
    assert pairs[(None, "alpha", "")].writes.holding and pairs[(None, "beta", "")].writes.holding
    await core.tells.end_written(replies["alpha"].tell.id)
    assert not pairs[(None, "alpha", "")].writes.holding
    assert pairs[(None, "beta", "")].writes.holding  # beta's end waits for beta's next tell, as before


async def test_the_lines_of_a_turn_cost_the_pair_no_cancel_scope_each(
    core: Dispatcher, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pair's actor waits for its next event under one scope whose deadline moves (a
    new scope a wait was a quarter of its time on a warm turn's twenty events)."""
    entered = 0
    entering = trio.CancelScope.__enter__

    def counted(scope: trio.CancelScope) -> trio.CancelScope:
        nonlocal entered
        entered += 1
        return entering(scope)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(core.tells.tell, Tell(to_team="alpha", message="long"), no_events)
        claude = await child(0)
        await claude.emit({**INIT, "uuid": "u1"})
        await trio.testing.wait_all_tasks_blocked()
        monkeypatch.setattr(trio.CancelScope, "__enter__", counted)
        for n in range(100):
            await claude.text(f"w{n} ")
            await trio.testing.wait_all_tasks_blocked()
        monkeypatch.undo()
        await claude.result("done")
    assert entered < 10  # 100 and more before


async def test_a_held_end_is_written_when_irisd_stops_within_the_hold(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """irisd asked to stop right after an answer: the end held for a next tell is written
    as the pair ends, not lost (README Reliability)."""
    from irisd.pool import pair_tells
    from irisd.store.db import open_database

    monkeypatch.setattr(pair_tells, "HOLD_END_S", 60.0)  # the stop certainly comes within it
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        replies: list[TellReply] = []

        async def tell() -> None:
            replies.append(await core.tells.tell(Tell(to_team="alpha", message="hi"), no_events))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tell)
            claude = await child(0)
            await turn(claude, "u1", "the answer")
            await claude.result("the answer")
        await trio.testing.wait_all_tasks_blocked()
        assert core.supervisor.pairs[(None, "alpha", "")].writes.holding  # held, not written yet
    row = tells.get(open_database(tmp_path / "iris.db"), replies[0].tell.id)
    assert row is not None and row.status == "completed" and row.text == "the answer"
