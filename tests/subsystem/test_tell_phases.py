"""What a tell waits for (its phase), computed in irisd: from claude's lines (pure), and
from the pair's queue and the process pool (fake children on trio's autojump clock)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import child_got_turn as child
from fakes.core import running_core, teams_config
from irisd.claude.wire import decode_line
from irisd.dispatch import Dispatcher
from irisd.tell.phase import after_line
from protocol.messages import Event, Tell, TellPhase, TellPhaseEvent, TellReply
from protocol.phases import describe, tool_summary


def test_claude_lines_name_the_phase() -> None:
    def read(line: str, current: TellPhase | None = None) -> TellPhase | None:
        return after_line(decode_line(line.encode()), current)

    assert read('{"type":"system","subtype":"init","session_id":"s"}') == TellPhase(name="waiting_for_model")
    tool_use = (
        '{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look."},'
        '{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -la","description":"list"}}]}}'
    )
    assert read(tool_use) == TellPhase(name="running_tool", tool="Bash", detail="ls -la")
    assert read('{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}') is None
    assert read('{"type":"user","message":{"content":[]}}') == TellPhase(name="waiting_for_model")
    delta = '{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}'
    assert read(delta) == TellPhase(name="answering")
    assert read(delta, TellPhase(name="answering")) is None  # no change, no event
    retry = '{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"error_status":529}'
    retrying = read(retry)
    assert retrying is not None and retrying.name == "api_retry" and "HTTP 529" in retrying.detail
    assert read('{"type":"stream_event","event":{"type":"message_start"}}', retrying) == TellPhase(
        name="waiting_for_model"
    )
    assert read("not json") is None and read('{"type":"something_new"}') is None


def test_phases_and_tool_inputs_in_words() -> None:
    assert describe(TellPhase(name="queued", ahead=2)) == "queued behind 2 tells"
    assert describe(TellPhase(name="queued", ahead=1)) == "queued behind 1 tell"
    # a tell to a mesh team whose home is down: what it waits for is the detail
    away = TellPhase(name="queued", detail="home irisd `ws-2` stopped since 20:08:30")
    assert describe(away) == "queued: home irisd `ws-2` stopped since 20:08:30"
    assert describe(TellPhase(name="waiting_for_slot", ahead=3)) == (
        "waiting for a process slot (3 busy; settings.maxProcesses)"
    )
    assert describe(TellPhase(name="starting_claude")) == "starting claude"
    assert describe(TellPhase(name="running_tool", tool="Read", detail="/a/b")) == "running a tool: Read `/a/b`"
    approval = TellPhase(name="awaiting_approval", tool="Bash", detail="touch x", approval_id="a-1")
    assert describe(approval) == "awaiting your approval: Bash `touch x`"
    assert tool_summary("Bash", {"command": "git   status\n-s", "description": "d"}) == "git status -s"
    assert tool_summary("Edit", {"file_path": "/src/app.py", "old_string": "a"}) == "/src/app.py"
    assert tool_summary("X", {"n": 1}) == '{"n": 1}'
    assert tool_summary("Bash", {"command": "x" * 200}, limit=10) == "x" * 9 + "…"


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Dispatcher]:
    async with running_core(tmp_path, teams_config(tmp_path, "  maxProcesses: 1\n")) as dispatcher:
        yield dispatcher


class Watched:
    """One tell run in the background, with every phase it announced."""

    def __init__(self) -> None:
        self.phases: list[TellPhase] = []
        self.reply: TellReply | None = None
        self.tell_id = ""

    async def on_event(self, event: Event) -> None:
        if isinstance(event, TellPhaseEvent):
            self.phases.append(event.phase)
            self.tell_id = event.tell_id

    async def run(self, core: Dispatcher, team: str, message: str) -> None:
        self.reply = await core.tells.tell(Tell(to_team=team, message=message, stream=True), self.on_event)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.phases]



async def test_a_tell_announces_each_thing_it_waits_for(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    first, second, other = Watched(), Watched(), Watched()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first.run, core, "alpha", "one")
        claude = await child(0)
        assert first.names == ["starting_claude"]  # written to a child that has not spoken yet
        nursery.start_soon(second.run, core, "alpha", "two")
        await trio.testing.wait_all_tasks_blocked()
        queued = second.phases[-1]
        assert (queued.name, queued.ahead, queued.head_id) == ("queued", 1, first.tell_id)
        assert describe(queued) == "queued behind 1 tell (starting claude)"  # what the tell ahead waits for
        # another pair, while the only process slot (maxProcesses: 1) is busy
        nursery.start_soon(other.run, core, "beta", "three")
        await trio.testing.wait_all_tasks_blocked()
        assert other.phases[-1].name == "waiting_for_slot" and other.phases[-1].ahead == 1
        assert describe(other.phases[-1]) == "waiting for a process slot (1 busy; settings.maxProcesses)"
        assert other.reply is None  # still waiting
        await claude.emit({"type": "system", "subtype": "init", "session_id": "s"})
        await claude.emit({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "/etc/hosts"}}]}})
        await trio.testing.wait_all_tasks_blocked()
        assert describe(second.phases[-1]).endswith("ahead is running a tool: Read `/etc/hosts`")
        assert second.phases[-1].since == queued.since  # queued behind the same tell: the wait goes on
        await claude.emit({"type": "user", "message": {"content": []}})
        await claude.text("done")
        await claude.result("done")
        await trio.testing.wait_all_tasks_blocked()
        assert first.names == ["starting_claude", "waiting_for_model", "running_tool", "waiting_for_model", "answering"]
        assert first.phases[2].tool == "Read" and first.phases[2].detail == "/etc/hosts"
        assert second.names[-1] == "waiting_for_model"  # the warm child took it at once
        await claude.result("two done")
        await trio.testing.wait_all_tasks_blocked()
        beta = await child(1)
        assert other.names[-1] == "starting_claude"  # the slot came free: its claude starts
        await beta.result("three done")
    assert first.reply is not None and first.reply.tell.phase is None  # a finished tell has none


async def test_a_tell_queued_behind_an_approval_names_it_and_how_to_decide_it(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    first, second = Watched(), Watched()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first.run, core, "alpha", "one")
        claude = await child(0)
        await claude.emit({"type": "system", "subtype": "init", "session_id": "s"})
        await claude.emit({"type": "control_request", "request_id": "r1", "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm -r build"}}})
        await trio.testing.wait_all_tasks_blocked()
        assert first.names[-1] == "awaiting_approval"
        approval_id = first.phases[-1].approval_id
        nursery.start_soon(second.run, core, "alpha", "two")
        await trio.testing.wait_all_tasks_blocked()
        queued = second.phases[-1]
        assert queued.head is not None and queued.head.approval_id == approval_id
        assert describe(queued) == (
            f"queued behind 1 tell; tell {first.tell_id[:10]} ahead awaits your approval of Bash `rm -r build`: "
            f"run 'iris approve {approval_id[:10]}' (or 'iris deny {approval_id[:10]}')"
        )
        info = (await core.tells.get(second.tell_id)).tell
        assert info.phase == queued  # what 'iris result', 'iris watch' and the dashboard read
        nursery.cancel_scope.cancel()


async def test_a_pair_that_recovers_no_longer_shows_its_old_failure(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    first = Watched()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first.run, core, "alpha", "one")
        claude = await child(0)
        await claude.result("one")
        await trio.testing.wait_all_tasks_blocked()
        claude.exit(-9)  # killed under us while idle
        await trio.testing.wait_all_tasks_blocked()
        [pair] = core.supervisor.statistics()
        assert pair.state == "stopped" and pair.reason != ""
        again = Watched()
        nursery.start_soon(again.run, core, "alpha", "two")
        await (await child(1)).result("two")
        await trio.testing.wait_all_tasks_blocked()
    [pair] = core.supervisor.statistics()
    assert pair.state == "idle" and pair.reason == ""


async def test_an_approval_down_the_chain_shows_on_the_tells_above_until_settled() -> None:
    from irisd.tell.active import ActiveTell
    from irisd.tell.machine import TellMachine

    def active(to_team: str, parent: ActiveTell | None = None) -> ActiveTell:
        machine = TellMachine(response_timeout_s=60, caller_timeout_ms=0, now=trio.current_time())
        return ActiveTell(from_team=None, to_team=to_team, message="m", machine=machine, parent=parent)

    outer = active("beta")
    middle = active("gamma", parent=outer)
    inner = active("delta", parent=middle)
    calling = TellPhase(name="running_tool", tool="mcp__iris__team_tell", detail="delta")
    outer.set_phase(calling)
    middle.set_phase(calling)
    inner.set_phase(TellPhase(name="awaiting_approval", tool="Bash", detail="rm -rf build", approval_id="a-1"))
    for tell in (outer, middle):
        assert (tell.phase.name, tell.phase.tool, tell.phase.approval_id) == ("awaiting_approval", "Bash", "a-1")
    inner.set_phase(TellPhase(name="running_tool", tool="Bash", detail="rm -rf build"))  # allowed
    for tell in (outer, middle):
        assert (tell.phase.name, tell.phase.detail) == ("running_tool", "delta")
    inner.set_phase(TellPhase(name="awaiting_approval", tool="Bash", detail="ls", approval_id="a-2"))
    assert outer.phase.approval_id == "a-2"
    inner.machine.cancel(trio.current_time())  # the tell ends while its approval waits
    inner.note_status()
    assert (outer.phase.name, middle.phase.name) == ("running_tool", "running_tool")
