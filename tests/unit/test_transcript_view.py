"""``iris cache read``: claude's stream-json lines as a conversation for people."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from iris_cli import render
from iris_cli.transcript import Shown, conversation
from protocol.messages import TellInfo, TranscriptEntry, TranscriptReply

LINES: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "s-1", "model": "m", "tools": ["Bash"] * 200},
    {"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Le"}}},
    {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls -la /srv", "description": "x"}}]}},
    {"type": "control_request", "request_id": "r", "request": {
        "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls -la /srv"}}},
    {"type": "system", "subtype": "api_retry", "attempt": 2, "error_status": 529},
    {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "\n".join(f"file{n}" for n in range(10))}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "Ten files."}]}},
    {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2500, "total_cost_usd": 0.01},
    {"type": "something_new"},
]


def entries() -> list[TranscriptEntry]:
    return [TranscriptEntry(at=0.0, type=str(line["type"]), raw=json.dumps(line)) for line in LINES]


def test_the_lines_become_a_conversation() -> None:
    assert conversation(entries()) == [
        Shown("start", "claude started (model m, session s-1)"),
        Shown("text", "Let me look."),
        Shown("tool", "Bash ls -la /srv"),
        Shown("approval", "asked to use Bash ls -la /srv"),
        Shown("notice", "claude retries the Anthropic API after HTTP 529 (attempt 2)"),
        Shown("result", "result: " + "\n".join(f"file{n}" for n in range(6)) + "\n… (4 more lines)"),
        Shown("text", "Ten files."),
        Shown("end", "done (success, 2.5 s, $0.0100)"),
        Shown("other", "(something_new line)"),
    ]


def test_cache_read_prints_it_for_people(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(render, "out", Console(file=buffer, width=80, highlight=False, soft_wrap=True))
    tell = TellInfo(id="t1", from_team=None, to_team="api", message="what is in /srv?", status="completed")
    render.transcript(TranscriptReply(tell=tell, entries=entries()))
    text = buffer.getvalue()
    assert text.startswith("t1 external->api · completed · ")
    assert "asked: what is in /srv?\n" in text and "→ Bash ls -la /srv\n" in text
    assert "  ← result: file0\n    file1\n" in text and "Ten files.\n" in text
    assert '"tools"' not in text  # the init line's bulk is not shown


def test_one_reading_of_the_lines_two_renderings() -> None:
    """The steps keep what claude did whole; only the renderers cut it, each its own way."""
    from iris_mcp.render import step_line
    from protocol.transcript import steps

    result = next(step for step in steps(entries()) if step.kind == "result")
    assert result.text == "\n".join(f"file{n}" for n in range(10))
    assert conversation(entries())[5].text.endswith("… (4 more lines)")  # iris cache read: 6 lines
    assert step_line(result) == "tool result: " + " ".join(f"file{n}" for n in range(10))  # the model: one line
    end = steps(entries())[-2]
    assert (end.kind, end.subtype, end.is_error) == ("end", "success", False)


def test_the_steps_keep_what_the_dashboard_draws() -> None:
    """The dashboard reads the same steps (irisd: ReadTranscript(steps=True)): a tool call's id
    ties its result and its approval to it; the end keeps its figures; thinking is a step."""
    from protocol.transcript import steps

    lines: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "claude_code_version": "2.1.330", "model": "m", "session_id": "s"},
        {"type": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "tool_use", "id": "u1", "name": "Read", "input": {}}]}},
        {"type": "control_request", "request": {"subtype": "can_use_tool", "tool_name": "Read", "tool_use_id": "u1"}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "u1", "content": [
            {"type": "text", "text": "a picture:"}, {"type": "image", "source": {}}]}]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 3500, "num_turns": 3,
         "total_cost_usd": 0.0123, "usage": {"input_tokens": 100, "output_tokens": 20}, "result": "ok"},
    ]
    found = steps([TranscriptEntry(at=float(n), type=str(line["type"]), raw=json.dumps(line))
                   for n, line in enumerate(lines)]
                  + [TranscriptEntry(at=9.0, type="stream_event", raw="a delta is never read")])
    start, thinking, tool, approval, result, end = found
    assert start.text == "claude 2.1.330 started (model m, session s)"
    assert (thinking.kind, thinking.text) == ("thinking", "hmm")
    assert (tool.tool_id, approval.tool_id, result.tool_id) == ("u1", "u1", "u1")
    assert result.text == "a picture:\n[image]"
    assert (end.duration_s, end.turns, end.cost_usd, end.input_tokens, end.output_tokens) == (3.5, 3, 0.0123, 100, 20)
    assert end.text == "done (success, 3.5 s, $0.0123)" and end.answer == "ok"


def test_the_steps_read_in_pieces_are_the_steps_read_whole() -> None:
    """irisd reads a long transcript's steps page by page (``StepReader``): whatever the cut,
    the same steps; with the tell, only the LAST end step carries its figures (an earlier
    one, of a claude that exited mid-tell, none), so an end and what follows are held."""
    from protocol.transcript import StepReader, steps

    lines = entries()
    twice = [*lines, *lines]  # two claudes' turns: two end steps
    tell = TellInfo(id="t1", from_team=None, to_team="api", message="?", status="completed", cost_usd=0.5)
    whole = steps(twice, tell)
    ends = [step for step in whole if step.kind == "end"]
    assert [end.cost_usd for end in ends] == [None, 0.5] and ends[1].text == "done (success, 2.5 s, $0.5000)"
    for cut in range(1, len(twice)):
        reader = StepReader()
        pieces = [*reader.feed(twice[:cut]), *reader.feed(twice[cut:]), *reader.finish(tell)]
        assert pieces == whole, cut
    reader = StepReader()
    assert reader.feed(lines)[-1].text == "Ten files."  # the end and the line after it are held ...
    assert [step.kind for step in reader.finish(tell)] == ["end", "other"]  # ... until the tell is known
    assert steps(lines)[-2].cost_usd == 0.01  # without the tell: claude's own figure


def test_the_mcp_tool_keeps_a_bounded_tail_of_a_long_transcript() -> None:
    """team_cache_read gathers the steps page by page and keeps only what it shows: the last
    200 steps and the last 20,000 characters, the same as rendering the whole reply."""
    from iris_mcp.render import MAX_TRANSCRIPT_CHARS, MAX_TRANSCRIPT_ENTRIES, TranscriptTail, render_transcript
    from protocol.messages import Step

    tell = TellInfo(id="t1", from_team=None, to_team="api", message="?", status="completed")
    many = [Step(kind="text", at=float(n), text=f"step {n} " + "y" * (n % 300)) for n in range(5000)]
    shown = TranscriptTail()
    for start in range(0, len(many), 700):
        shown.add(many[start:start + 700])
    paged = shown.output(tell)
    assert paged == render_transcript(TranscriptReply(tell=tell, entries=[], steps=many))
    assert len(paged.text) == MAX_TRANSCRIPT_CHARS and paged.text.endswith("step 4999 " + "y" * (4999 % 300))
    assert len(paged.data["entries"]) == MAX_TRANSCRIPT_ENTRIES and paged.data["entries_truncated"]
    assert sum(len(line) + 1 for line in shown._lines) < MAX_TRANSCRIPT_CHARS + 1000  # what it holds
