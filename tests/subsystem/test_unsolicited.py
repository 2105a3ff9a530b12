"""Output a pair's claude prints while no tell runs (a message from another Claude Code
session that got in, a background task finishing): kept, announced, shown, and never
given to the next tell. Fault injection with a fake child on trio's autojump clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import FakeChild, child_got_turn
from fakes.core import no_events, running_core
from harness import wait_until
from irisd.caller import OWNER
from irisd.claude.command import CROSS_SESSION_TOOLS, claude_argv
from irisd.claude.wire import decode_line
from irisd.dispatch import Dispatcher
from irisd.pool.unsolicited_turn import opens_turn
from irisd.store import unsolicited
from protocol.errors import NotFoundError
from protocol.messages import (
    ClearCache,
    Event,
    GetStatus,
    ReadTranscript,
    ReadUnsolicited,
    Report,
    ReportReply,
    StatusReply,
    Tell,
    UnsolicitedEvent,
    UnsolicitedReply,
)
from protocol.phases import describe
from subsystem.test_pair_timing import Caller, config_for, start_tell


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Dispatcher]:
    async with running_core(tmp_path, config_for(tmp_path)) as dispatcher:
        yield dispatcher


async def idle_child(core: Dispatcher, nursery: trio.Nursery) -> FakeChild:
    """A warm child of external->alpha that has answered one tell."""
    caller = await start_tell(nursery, core, message="first")
    child = await child_got_turn()
    await child.result("first answer")
    await wait_until(lambda: caller.replied_at is not None, every=0.01)
    return child


async def unsolicited_turn(child: FakeChild, text: str, *, result: bool = True) -> None:
    """What claude 2.1.330 printed for a message of another session it accepted."""
    await child.emit({"type": "command_lifecycle", "state": "started"})
    await child.emit({"type": "system", "subtype": "init", "session_id": "s"})
    await child.text(text)
    await child.emit({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})
    if result:
        await child.result(text)
        await child.emit({"type": "command_lifecycle", "state": "completed"})


def pair_state(core: Dispatcher) -> str:
    return next(iter(core.supervisor.pairs.values())).state


async def test_a_turn_no_tell_asked_for_is_recorded_announced_and_shown(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    events: list[Event] = []
    watcher = core.hub.subscribe("alpha")
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        await unsolicited_turn(child, "I was told to delete things")
        await trio.testing.wait_all_tasks_blocked()
        assert pair_state(core) == "idle"  # the turn ended with its result
        await trio.sleep(2)  # the record ends QUIET_S after its last line
        events += watcher.take_nowait()
    turns = [e.turn for e in events if isinstance(e, UnsolicitedEvent)]
    assert [t.status for t in turns] == ["running", "completed"]
    ended = turns[-1]
    assert ended.id.startswith("u-") and ended.to_team == "alpha" and ended.from_team is None
    assert ended.text == "I was told to delete things" and ended.finished_at is not None

    status = await core.dispatch(GetStatus(), OWNER, no_events)
    assert isinstance(status, StatusReply) and status.unsolicited == [ended]
    transcript = await core.dispatch(ReadUnsolicited(turn_id=ended.id), OWNER, no_events)
    assert isinstance(transcript, UnsolicitedReply)
    # Every line is kept, the trailing command_lifecycle after the result too.
    assert [e.type for e in transcript.entries] == [
        "command_lifecycle", "system", "stream_event", "assistant", "result", "command_lifecycle"
    ]
    assert pair_state(core) == "idle"
    with pytest.raises(NotFoundError, match="no unsolicited turn"):
        await core.dispatch(ReadUnsolicited(turn_id="u-nope"), OWNER, no_events)


async def test_the_next_tell_waits_for_the_turn_and_its_answer_is_its_own(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        await unsolicited_turn(child, "injected ", result=False)
        await trio.testing.wait_all_tasks_blocked()
        (process,) = core.supervisor.statistics()
        assert process.state == "processing" and process.unsolicited.startswith("u-") and not process.current_tell
        caller = Caller()
        nursery.start_soon(caller.run, core, Tell(to_team="alpha", message="second"))
        await trio.sleep(5)
        assert len(child.sent) == 1  # the tell waits: the child is still in the other turn
        report = await core.dispatch(Report(to_team="alpha"), OWNER, no_events)
        assert isinstance(report, ReportReply)
        (waiting,) = [t for t in report.tells if t.message == "second"]
        assert waiting.phase is not None and describe(waiting.phase).startswith(
            "queued: claude is taking a turn of its own"
        )  # says what it waits for
        await child.text("more injected")
        await child.result("injected more injected")
        await trio.testing.wait_all_tasks_blocked()
        assert child.sent[-1]["message"]["content"][0]["text"] == "second"  # type: ignore[index]
        await child.text("second answer")
        await child.result("second answer")
        await wait_until(lambda: caller.replied_at is not None, every=0.01)
        await trio.sleep(2)  # the record ends QUIET_S after its last line
    assert caller.reply is not None and caller.reply.status == "completed"
    assert caller.reply.tell.text == "second answer"
    (turn,) = await core.store.call(unsolicited.recent, 10)
    assert turn.status == "completed" and turn.text == "injected more injected"


async def test_a_turn_that_goes_silent_has_its_child_stopped_and_the_tell_goes_on(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        await unsolicited_turn(child, "hanging", result=False)
        t0 = trio.current_time()
        caller = Caller()
        nursery.start_soon(caller.run, core, Tell(to_team="alpha", message="second"))
        await trio.sleep(121)
        fresh = await child_got_turn(1)  # a new child, after the silent one was stopped
        assert child.stopped_at == pytest.approx(t0 + 120)  # responseTimeout
        await fresh.result("second answer")
        await wait_until(lambda: caller.replied_at is not None, every=0.01)
    assert caller.reply is not None and caller.reply.tell.text == "second answer"
    (turn,) = await core.store.call(unsolicited.recent, 10)
    assert turn.status == "timed_out" and turn.text == "hanging" and "120 s" in turn.error


async def test_a_child_that_exits_mid_turn_ends_the_turn_interrupted(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        await unsolicited_turn(child, "half", result=False)
        child.exit(1)
        await trio.testing.wait_all_tasks_blocked()
    (turn,) = await core.store.call(unsolicited.recent, 10)
    assert turn.status == "interrupted" and "claude exited" in turn.error and turn.text == "half"
    assert pair_state(core) == "stopped"


async def test_lines_outside_a_turn_are_kept_and_a_permission_request_is_denied_and_kept(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        await child.emit({"type": "novelty", "note": "no turn"})
        await trio.testing.wait_all_tasks_blocked()
        assert pair_state(core) == "idle"  # nothing to wait for
        await trio.sleep(2)
        await child.emit({"type": "system", "subtype": "task_notification"})  # as before a task's turn
        await child.emit({"type": "control_request", "request_id": "r9", "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm -rf x"}}})
        await trio.testing.wait_all_tasks_blocked()
        assert pair_state(core) == "processing"
        denial = child.sent[-1]
        assert denial["type"] == "control_response"
        assert denial["response"]["response"]["behavior"] == "deny"  # type: ignore[index]
        await child.result("could not")
        await trio.sleep(2)
        assert pair_state(core) == "idle"
    permission, stray = await core.store.call(unsolicited.recent, 10)
    assert stray.status == "completed" and '"novelty"' in stray.text  # a line is what it said
    assert permission.status == "completed" and permission.text == "could not"
    lines = await core.store.call(unsolicited.messages, permission.id)
    assert [kind for _, kind, _ in lines] == ["system", "control_request", "result"]
    cleared = await core.dispatch(ClearCache(to_team="alpha"), OWNER, no_events)
    assert cleared.count == 3  # type: ignore[union-attr]  # the first tell and both records
    assert await core.store.call(unsolicited.recent, 10) == []


async def test_a_turn_claude_queued_itself_ahead_of_a_tell_is_kept_out_of_it(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    """The tell was written while claude had another session's message queued: claude
    runs that one first, framed by command_lifecycle; the tell's own turn follows."""
    async with trio.open_nursery() as nursery:
        child = await idle_child(core, nursery)
        caller = Caller()
        nursery.start_soon(caller.run, core, Tell(to_team="alpha", message="second"))
        await trio.testing.wait_all_tasks_blocked()
        assert child.sent[-1]["message"]["content"][0]["text"] == "second"  # type: ignore[index]
        await unsolicited_turn(child, "injected")
        await child.emit({"type": "system", "subtype": "init", "session_id": "s"})
        await child.text("second answer")
        await child.result("second answer")
        await wait_until(lambda: caller.replied_at is not None, every=0.01)
        await trio.sleep(2)
    assert caller.reply is not None and caller.reply.tell.text == "second answer"
    transcript = await core.records.transcript(ReadTranscript(tell_id=caller.reply.tell.id), no_events)
    assert [e.type for e in transcript.entries] == ["system", "result"]  # its token deltas streamed, not stored
    (turn,) = await core.store.call(unsolicited.recent, 10)
    assert turn.status == "completed" and turn.text == "injected"
    lines = await core.store.call(unsolicited.messages, turn.id)
    assert [kind for _, kind, _ in lines][0::5] == ["command_lifecycle", "command_lifecycle"]


def test_lines_that_open_a_turn() -> None:
    assert opens_turn(decode_line(b'{"type":"system","subtype":"init"}'))
    assert opens_turn(decode_line(b'{"type":"assistant","message":{"content":[]}}'))
    assert opens_turn(decode_line(b'{"type":"stream_event","event":{}}'))
    assert not opens_turn(decode_line(b'{"type":"system","subtype":"status"}'))
    assert opens_turn(decode_line(b'{"type":"command_lifecycle","state":"started"}'))
    assert not opens_turn(decode_line(b'{"type":"command_lifecycle","state":"completed"}'))
    assert not opens_turn(decode_line(b'{"type":"novelty"}'))
    assert not opens_turn(decode_line(b'{"type":"result"}'))
    assert not opens_turn(decode_line(b"garbage"))


def test_children_refuse_other_sessions_and_lack_their_tools_unless_a_team_allows_them() -> None:
    argv = claude_argv("claude", session_id="u", resume=False, system_prompt="use team_tell")
    assert argv[argv.index("--settings") + 1] == '{"crossSessionInbound": "refuse"}'
    assert argv[argv.index("--append-system-prompt") + 1] == "use team_tell"
    disallowed = argv[argv.index("--disallowedTools") + 1 :]
    assert set(CROSS_SESSION_TOOLS) == {"SendMessage", "ListAgents"} <= set(disallowed)

    allowed = claude_argv("claude", session_id="u", resume=False, allowed_tools=["SendMessage"],
                          disallowed_tools=["Bash"])
    assert allowed[allowed.index("--disallowedTools") + 1 :] == ["Bash", "ListAgents"]
    assert allowed[allowed.index("--settings") + 1] == '{"crossSessionInbound": "refuse"}'  # inbound: always
