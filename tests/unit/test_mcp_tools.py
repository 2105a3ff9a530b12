"""The MCP shim's pure layer: schemas, argument checks, identity, progress, rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iris_mcp.identity import resolve_identity
from iris_mcp.progress import Said
from iris_mcp.render import error_output, render_reply, render_teams, render_tell, step_line
from iris_mcp.tools import DEFAULT_TELL_TIMEOUT_MS, TOOLS, TOOLS_BY_NAME, input_schema, parse_args
from iris_mcp.watch import MAX_PROGRESS_CHARS, TellWatch
from protocol.errors import InvalidRequestError, PermissionDeniedError
from protocol.limits import THREAD_PATTERN
from protocol.messages import (
    PairReply,
    PairsReply,
    ProcessInfo,
    StatusReply,
    TeamInfo,
    TellInfo,
    TellNotice,
    TellPhase,
    TellPhaseEvent,
    TellReply,
    TellState,
    TellText,
    TranscriptEntry,
    TranscriptReply,
)
from protocol.transcript import steps

EXPECTED_TOOLS = [
    "team_tell",
    "team_isAwake",
    "team_wake",
    "team_sleep",
    "team_wake_all",
    "team_report",
    "team_command",
    "team_cache_read",
    "team_cache_clear",
    "team_teams",
    "team_getTeamName",
    "team_result",
    "team_cancel",
    "team_approvals",
    "team_approve",
    "team_deny",
    "team_questions",
    "team_answer",
    "team_costs",
    "team_status",
    "team_sessions",
]


def test_the_tool_set_and_its_schemas() -> None:
    assert [t.name for t in TOOLS] == EXPECTED_TOOLS
    for tool in TOOLS:
        schema = input_schema(tool.args)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert len(tool.description) > 40, tool.name  # something a model can follow
        for name, prop in schema["properties"].items():
            assert "anyOf" not in prop and prop.get("type"), (tool.name, name)
            assert prop.get("description"), (tool.name, name)
        json.dumps(schema)  # plain JSON
    tell = input_schema(TOOLS_BY_NAME["team_tell"].args)
    assert tell["required"] == ["message"]  # and toTeam, or toTeams (checked by the shim)
    assert set(tell["properties"]) == {
        "toTeam", "toTeams", "message", "fromTeam", "timeout", "persist", "ttlDays", "maxBudgetUsd", "thread"
    }
    assert tell["properties"]["thread"]["pattern"] == THREAD_PATTERN
    assert tell["properties"]["timeout"]["default"] == DEFAULT_TELL_TIMEOUT_MS
    assert tell["properties"]["timeout"]["minimum"] == -1
    assert "default" not in tell["properties"]["fromTeam"]
    command = input_schema(TOOLS_BY_NAME["team_command"].args)
    assert command["properties"]["thread"]["pattern"] == THREAD_PATTERN  # a thread's conversation too


def test_arguments_are_checked_with_messages_a_model_can_act_on() -> None:
    tell = TOOLS_BY_NAME["team_tell"]
    args = parse_args(tell, {"toTeam": "b", "message": "hi", "fromTeam": None, "timeout": "1000"})
    assert (args.to_team, args.from_team, args.timeout, args.persist) == ("b", None, 1000, False)
    with pytest.raises(InvalidRequestError, match=r"unknown field `team`.*Its arguments: message, toTeam, toTeams"):
        parse_args(tell, {"team": "b", "message": "hi"})
    with pytest.raises(InvalidRequestError, match="missing required field `message`"):
        parse_args(tell, {"toTeam": "b"})
    with pytest.raises(InvalidRequestError, match=r"Expected `int` >= -1 - at `\$.timeout`"):
        parse_args(tell, {"toTeam": "b", "message": "hi", "timeout": -2})
    assert parse_args(TOOLS_BY_NAME["team_teams"], None) is not None


def team(name: str, path: Path) -> TeamInfo:
    return TeamInfo(name=name, path=str(path))


def test_identity_is_the_deepest_team_folder_holding_the_cwd(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    (inner / "src").mkdir(parents=True)
    (tmp_path / "outer-sibling").mkdir()
    teams = [team("outer", outer), team("inner", inner)]

    assert resolve_identity(None, str(inner / "src"), teams).team == "inner"
    assert resolve_identity(None, str(outer), teams).team == "outer"
    # A prefix of the name is not a parent folder.
    assert resolve_identity(None, str(tmp_path / "outer-sibling"), teams).team is None
    outside = resolve_identity(None, str(tmp_path), teams)
    assert (outside.team, outside.source) == (None, "outside")
    assert "external caller" in outside.describe()
    explicit = resolve_identity("other", str(inner), teams)
    assert (explicit.team, explicit.source) == ("other", "--team")


def test_identity_compares_real_paths(tmp_path: Path) -> None:
    real = tmp_path / "real" / "proj"
    real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    # Started through the symlink, configured by the real path, and the other way round.
    assert resolve_identity(None, str(link), [team("proj", real)]).team == "proj"
    assert resolve_identity(None, str(real / "."), [team("proj", link)]).team == "proj"


def test_a_contradicting_from_team_is_refused() -> None:
    me = resolve_identity("alpha", "/x", [])
    assert me.check_from_team(None) == "alpha"
    assert me.check_from_team("alpha") == "alpha"
    # The rule irisd applies to its children (irisd/caller.py), and its error: iris_common/identity.py.
    with pytest.raises(PermissionDeniedError, match="fromTeam 'beta' is refused: you are team 'alpha'"):
        me.check_from_team("beta")
    external = resolve_identity(None, "/nowhere", [])
    assert external.check_from_team(None) is None
    with pytest.raises(PermissionDeniedError, match=r"external caller.*iris mcp --team beta"):
        external.check_from_team("beta")


def test_progress_carries_the_text_so_far() -> None:
    watch = TellWatch("beta")
    assert watch.feed(TellState(tell_id="t1", status="queued")) == Said("queued for beta")
    assert watch.tell_id == "t1"
    assert watch.feed(TellState(tell_id="t1", status="running")) == Said("beta is working on it")
    assert watch.feed(TellText(tell_id="t1", text="one ")) == Said("one ")
    assert watch.feed(TellText(tell_id="t1", text="two")) == Said("one two")  # the whole text so far
    assert watch.feed(TellState(tell_id="t1", status="running")) is None  # no change
    assert watch.feed(TellState(tell_id="t1", status="completed")) is None  # the result follows
    watch.feed(TellText(tell_id="t1", text="x" * 2 * MAX_PROGRESS_CHARS))
    assert len(watch.message()) == MAX_PROGRESS_CHARS and watch.message().startswith("…")


def test_progress_shows_a_notice_until_the_text_comes() -> None:
    watch = TellWatch("beta")
    watch.feed(TellState(tell_id="t1", status="running"))
    notice = "claude is retrying the Anthropic API after HTTP 529 overloaded (attempt 1 of 10)"
    assert watch.feed(TellNotice(tell_id="t1", text=notice)) == Said(notice)
    assert watch.feed(TellText(tell_id="t1", text="answer")) == Said("answer")


ASK = (
    "ask your person to run `iris approve {0}` or `iris deny {0}` (or to decide it in the dashboard or "
    "`iris monitor`); team_approve / team_deny decide it if they let you"
)


def test_progress_names_what_the_tell_waits_for_and_what_a_person_must_do_at_once() -> None:
    watch = TellWatch("beta")
    phase = TellPhaseEvent(tell_id="t1", phase=TellPhase(name="queued", ahead=2))
    assert watch.feed(phase) == Said("beta: queued behind 2 tells", urgent=True)
    assert watch.feed(phase) is None  # no change, no notification
    assert watch.feed(TellPhaseEvent(tell_id="t1", phase=TellPhase(name="starting_claude"))) == (
        Said("beta: starting claude")
    )
    assert watch.feed(TellText(tell_id="t1", text="Let me check.")) == Said("Let me check.")
    approval = TellPhase(name="awaiting_approval", tool="Bash", detail="touch x", approval_id="a-9")
    assert watch.feed(TellPhaseEvent(tell_id="t1", phase=approval)) == Said(
        "beta: awaiting your approval: Bash `touch x`; " + ASK.format("a-9"), urgent=True
    )
    running = TellPhaseEvent(tell_id="t1", phase=TellPhase(name="running_tool", tool="Bash", detail="touch x"))
    assert watch.feed(running) == Said("Let me check.")  # text so far wins again


def test_a_tell_queued_behind_an_approval_asks_the_model_to_ask_its_person() -> None:
    approval = TellPhase(name="awaiting_approval", tool="Bash", detail="rm x", approval_id="a-0123456789ab")
    queued = TellPhase(name="queued", ahead=1, head=approval, head_id="t0")
    said = TellWatch("beta").feed(TellPhaseEvent(tell_id="t1", phase=queued))
    assert said == Said(
        "beta: queued behind 1 tell; tell t0 ahead awaits your approval of Bash `rm x`: run 'iris approve "
        "a-01234567' (or 'iris deny a-01234567'); " + ASK.format("a-0123456789ab"),
        urgent=True,
    )
    info = TellInfo(id="t1", from_team="alpha", to_team="beta", message="hi", status="queued", phase=queued)
    text = render_tell(TellReply(status="in_progress", tell=info)).text
    assert "it is queued behind 1 tell; tell t0 ahead awaits your approval" in text
    assert "run 'iris approve a-01234567'" in text
    assert text.count("ask your person") == 1 and ASK.format("a-0123456789ab") in text  # one instruction, once


def test_a_lost_tell_is_not_resent_and_the_model_learns_where_to_look() -> None:
    watch = TellWatch("beta")
    assert 'team_report {"team": "beta"}' in watch.lost_message()
    watch.feed(TellState(tell_id="t9", status="running"))
    assert "was not sent again" in watch.lost_message()
    assert 'team_result {"tellId": "t9"}' in watch.lost_message()


def tell_reply(status: str, tell_status: str, text: str = "", error: str = "") -> TellReply:
    info = TellInfo(
        id="t1", from_team="alpha", to_team="beta", message="hi", status=tell_status,  # type: ignore[arg-type]
        text=text, error=error,
    )
    return TellReply(status=status, tell=info)  # type: ignore[arg-type]


def test_tell_replies_render_with_the_next_step() -> None:
    done = render_tell(tell_reply("completed", "completed", "the answer"))
    assert (done.text, done.is_error) == ("the answer", False)
    assert done.data["id"] == "t1" and done.data["tell_status"] == "completed"

    partial = render_tell(tell_reply("in_progress", "running", "half"))
    assert not partial.is_error
    assert "still working (tellId t1)" in partial.text and "half" in partial.text
    assert 'team_result {"tellId": "t1"}' in partial.text

    sent = render_tell(tell_reply("in_progress", "queued"))
    assert "Sent to beta (tellId t1); it is queued" in sent.text

    failed = render_tell(tell_reply("failed", "failed", "so far", error="claude exited"))
    assert failed.is_error and "failed: claude exited" in failed.text and "so far" in failed.text


def test_pairs_and_teams_render_by_reply_type() -> None:
    process = ProcessInfo(from_team="alpha", to_team="beta", state="idle", pid=42)
    woke = render_reply(PairReply(process=process, message="woken"))
    assert woke.text == "woken. alpha->beta: awake (idle, pid 42)"
    asleep = ProcessInfo(from_team=None, to_team="beta", state="stopped")
    pairs = render_reply(PairsReply(processes=[asleep], errors={"gamma": "cannot start"}))
    assert pairs.is_error and "external->beta: asleep (stopped)" in pairs.text
    assert "gamma: not woken: cannot start" in pairs.text

    status = StatusReply(
        pid=1, daemon_version="0", started_at=0, socket_path="s", config_path="c",
        teams=[TeamInfo(name="alpha", path="/a", description="web"), TeamInfo(name="beta", path="/b")],
        processes=[process, ProcessInfo(from_team=None, to_team="alpha", state="idle")],
        max_processes=4,
    )
    teams = render_teams(status, "alpha")
    assert teams.text.splitlines() == ["- alpha (you): web [asleep] /a", "- beta: no description [awake] /b"]
    assert teams.data["you"] == "alpha" and teams.data["teams"][1]["state"] == "idle"


def test_transcript_lines_say_what_claude_did() -> None:
    assistant = {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": "Let me look"},
                                {"type": "tool_use", "name": "Read", "input": {"file": "a.py"}}]},
    }
    result = {"type": "result", "subtype": "success", "result": "done"}
    raw = [("assistant", json.dumps(assistant)), ("result", json.dumps(result)), ("system", "not json")]
    lines = [step_line(step) for step in steps([TranscriptEntry(at=0.0, type=t, raw=r) for t, r in raw])]
    assert lines == [
        "assistant: Let me look", 'calls Read {"file": "a.py"}', "result (success): done", "(not JSON: not json)",
    ]


def test_structured_content_stands_on_its_own() -> None:
    # Claude Code shows the model the structured content instead of the text.
    answer = render_tell(tell_reply("completed", "completed", "the answer"))
    assert "summary" not in answer.structured()  # the answer is already its "text"
    partial = render_tell(tell_reply("in_progress", "running", "half"))
    assert partial.structured()["summary"] == partial.text
    assert next(iter(partial.structured())) == "summary"
    error = error_output("team 'x' is not configured", "unknown_team")
    assert error.structured() == {"error": {"code": "unknown_team", "message": "team 'x' is not configured"}}


def test_transcripts_are_summarised_step_by_step() -> None:
    info = TellInfo(id="t1", from_team=None, to_team="beta", message="hi", status="completed")
    lines = [
        ("system", {"type": "system", "subtype": "init"}),
        ("stream_event", {"type": "stream_event", "event": {"type": "content_block_delta"}}),
        ("assistant", {"type": "assistant", "message": {"content": [{"type": "text", "text": "hello"}]}}),
        ("result", {"type": "result", "subtype": "success", "result": "hello"}),
    ]
    entries = [TranscriptEntry(at=i, type=kind, raw=json.dumps(raw)) for i, (kind, raw) in enumerate(lines)]
    output = render_reply(TranscriptReply(tell=info, entries=entries))
    assert output.text.splitlines() == [
        "tell t1 [completed] external->beta: hi",
        "claude started (model ?, session ?)",  # the step's words, as iris cache read shows them
        "assistant: hello",
        "result (success): hello",
    ]
    assert [e["line"] for e in output.data["entries"]] == output.text.splitlines()[1:]  # no raw JSON
