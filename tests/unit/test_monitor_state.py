"""The picture ``iris monitor`` keeps, fed with events by hand, and how it is drawn."""

from __future__ import annotations

import io

import msgspec
from rich.console import Console

from iris_cli.monitor import TELLS_SHOWN, MonitorState, render
from protocol.messages import (
    ApprovalEvent,
    ApprovalInfo,
    ProcessEvent,
    ProcessInfo,
    StatusReply,
    TellNotice,
    TellState,
    TellText,
    UnsolicitedEvent,
    UnsolicitedInfo,
)


def screen(state: MonitorState, note: str = "") -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(render(state, note=note))
    return console.export_text()


def status(*processes: ProcessInfo) -> StatusReply:
    return StatusReply(pid=42, daemon_version="0.1.0", started_at=0.0, socket_path="/s", config_path="/c",
                       teams=[], processes=list(processes), max_processes=10)


def approval(status: str = "pending") -> ApprovalInfo:
    return ApprovalInfo(id="a-1", from_team=None, to_team="alpha", tell_id="t1", tool_name="Bash",
                        input={"command": "make test"}, status=status,  # type: ignore[arg-type]
                        created_at=0.0, expires_at=600.0)


def test_a_pair_changes_state_with_its_process_event() -> None:
    state = MonitorState()
    state.apply_status(status(ProcessInfo(from_team=None, to_team="alpha", state="spawning")))
    assert "external->alpha  spawning" in screen(state)
    changed = state.apply(ProcessEvent(process=ProcessInfo(from_team=None, to_team="alpha", state="idle", pid=7)))
    assert not changed  # the event carries the new state: no need to ask for the status
    assert "external->alpha  idle" in screen(state) and "0 of 10" not in screen(state)


def test_a_tell_streams_then_ends_and_old_ones_make_room() -> None:
    state = MonitorState()
    state.apply_status(status())
    assert state.apply(TellState(tell_id="t1", status="queued", to_team="alpha", message="What is up?"))
    state.apply(TellState(tell_id="t1", status="running", to_team="alpha"))
    for word in ("all ", "is ", "well"):
        state.apply(TellText(tell_id="t1", text=word))
    drawn = screen(state)
    assert "t1" in drawn and "running" in drawn and "What is up?" in drawn and "all is well" in drawn
    state.apply(TellNotice(tell_id="t1", text="claude is retrying the Anthropic API"))
    assert "retrying the Anthropic API" in screen(state)
    state.apply(TellState(tell_id="t1", status="completed", to_team="alpha"))
    assert "completed" in screen(state) and "all is well" in screen(state)
    for n in range(2, TELLS_SHOWN + 3):
        state.apply(TellState(tell_id=f"t{n}", status="completed", to_team="alpha"))
    assert len(state.tells) == TELLS_SHOWN and "t1" not in state.tells


def test_a_tell_seen_from_the_middle_still_shows() -> None:
    state = MonitorState()
    state.apply(TellText(tell_id="late", text="half an answer"))
    assert "late" in screen(state) and "half an answer" in screen(state)


def test_approvals_show_the_command_and_how_to_decide_until_decided() -> None:
    state = MonitorState()
    state.apply_approvals([approval(), approval("allowed")])
    drawn = screen(state)
    assert "approvals waiting (1)" in drawn and "$ make test" in drawn
    assert "iris approve a-1 [--remember]" in drawn and "iris deny a-1 --reason" in drawn
    state.apply(ApprovalEvent(approval=approval("denied")))
    assert "approvals waiting" not in screen(state)


def test_an_mcp_servers_input_request_shows_its_question_its_fields_and_how_to_answer() -> None:
    state = MonitorState()
    schema = {"type": "object", "properties": {"name": {"type": "string", "title": "Database"}}, "required": ["name"]}
    asked = msgspec.structs.replace(approval(), tool_name="asker", input={}, kind="input",
                                    message="Which database?", schema=schema)
    state.apply_approvals([asked])
    drawn = screen(state)
    assert "external->alpha: asker asks for your input (" in drawn and "Which database?" in drawn
    assert "fields: name (Database: string) *" in drawn
    assert "iris approve a-1 --field NAME=VALUE ...  |  iris deny a-1 (declines)" in drawn


def test_unsolicited_turns_and_the_reason_it_ended_are_shown() -> None:
    state = MonitorState()
    turn = UnsolicitedInfo(id="u-1", from_team=None, to_team="alpha", status="completed", started_at=0.0,
                           text="I did something nobody asked")
    assert state.apply(UnsolicitedEvent(turn=turn))
    drawn = screen(state, note="irisd is stopping; the monitor ends")
    assert "u-1" in drawn and "I did something nobody asked" in drawn
    assert "irisd is stopping" in drawn


def test_a_team_filter_keeps_only_its_pairs() -> None:
    state = MonitorState(team="beta")
    state.apply_status(status(ProcessInfo(from_team=None, to_team="alpha", state="idle"),
                              ProcessInfo(from_team="beta", to_team="alpha", state="idle")))
    assert list(state.processes) == [("beta", "alpha", "")]


def test_each_thread_of_a_pair_is_a_process_row_of_its_own() -> None:
    state = MonitorState()
    state.apply_status(status(ProcessInfo(from_team=None, to_team="alpha", state="idle"),
                              ProcessInfo(from_team=None, to_team="alpha", state="processing", thread="auth")))
    assert list(state.processes) == [(None, "alpha", ""), (None, "alpha", "auth")]
    assert "external->alpha#auth" in screen(state)


def test_at_80x24_approvals_come_first_and_answers_wrap_to_the_width() -> None:
    state = MonitorState()
    state.apply_status(status(*(
        ProcessInfo(from_team=sender, to_team="backend-service", state="processing", pid=4000 + n, queued=2)
        for n, sender in enumerate(("frontend-web", "mobile-app", None))
    )))
    state.apply_approvals([ApprovalInfo(
        id="a-" + "d72cea" * 5 + "00", from_team="frontend-web", to_team="backend-service", tell_id="t1",
        tool_name="Bash", input={"command": "npm test -- --watch=false " + "x" * 100}, status="pending",
        created_at=0.0, expires_at=600.0,
    )])
    answer = " ".join(f"word{n}" for n in range(200))
    for n in range(12):
        tell_id = f"{n:016x}"
        state.apply(TellState(tell_id=tell_id, status="running", from_team="frontend-web", to_team="backend-service",
                              message="How does the users endpoint paginate its results?"))
        state.apply(TellText(tell_id=tell_id, text=answer))
    console = Console(width=80, height=24, record=True, file=io.StringIO())
    console.print(render(state, width=80, height=24))
    lines = console.export_text().splitlines()
    assert len(lines) <= 24, "\n".join(lines)
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("approvals waiting (1)")  # the most actionable part, right under the title
    assert any("iris approve a-d72cead7 [--remember]  |  iris deny a-d72cead7" in line for line in lines)
    assert any("frontend-web->backend-service  processing" in line for line in lines)  # pair and state whole
    answers = [line for line in lines if "word199" in line]  # each shown tell: the end of its answer, wide
    assert answers and all(len(line.strip()) > 60 for line in answers)


def test_team_and_model_text_is_drawn_as_written() -> None:
    hostile = "see [/code] and list[int] and [bold]not bold[/bold]"
    state = MonitorState()
    state.apply_status(status(ProcessInfo(from_team=None, to_team="alpha", state="failed", reason=hostile)))
    state.apply(TellState(tell_id="t1", status="running", to_team="alpha", message=hostile))
    state.apply(TellText(tell_id="t1", text=hostile))
    state.apply(ApprovalEvent(approval=ApprovalInfo(
        id="a-1", from_team=None, to_team="alpha", tell_id="t1", tool_name="Bash", input={"command": hostile},
        status="pending", created_at=0.0, expires_at=600.0)))
    state.apply(UnsolicitedEvent(turn=UnsolicitedInfo(id="u-1", from_team=None, to_team="alpha", status="running",
                                                      started_at=0.0, text=hostile)))
    shown = screen(state, note=hostile)
    assert shown.count("[/code]") == 6 and shown.count("list[int]") == 6 and "[bold]not bold[/bold]" in shown
