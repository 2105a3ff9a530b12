"""A tell's transcript as steps: what claude did, read once from its stored stream-json lines.

``steps`` is the one reading of the lines (pure, no I/O); each front end only renders the
steps its own way: ``iris cache read`` for people (iris_cli/render.py), ``team_cache_read``
for a model (iris_mcp/tools.py). A line that is not JSON, or of a type Iris does not know,
becomes an ``other`` step; token deltas and claude's answers to Iris's own requests are
left out (the assistant line after the deltas holds the text).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec

from protocol.messages import TranscriptEntry
from protocol.phases import tool_summary

StepKind = Literal["start", "text", "tool", "result", "approval", "notice", "end", "other"]
TOOL_SUMMARY_CHARS = 200


class Step(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing claude did. ``text`` says it in words (a tool: its name and input in a
    line; a result: the tool's whole output; end: outcome, time and cost)."""

    kind: StepKind
    at: float = 0.0
    text: str = ""
    tool: str = ""  # tool, approval: the tool's name
    input: Any = None  # tool, approval: the tool's input
    is_error: bool = False  # result: the tool failed; end: the turn failed
    answer: str = ""  # end: claude's result text
    subtype: str = ""  # end: claude's own word for the outcome (success, error_max_turns, ...)


def steps(entries: list[TranscriptEntry]) -> list[Step]:
    out: list[Step] = []
    for entry in entries:
        try:
            line = json.loads(entry.raw)
        except ValueError:
            out.append(Step(kind="other", at=entry.at, text=f"(not JSON: {entry.raw[:80]})"))
            continue
        if isinstance(line, dict):
            out.extend(_one(line, entry.at))
    return out


def _one(line: dict[str, Any], at: float) -> list[Step]:
    kind = line.get("type")
    if kind == "system":
        if line.get("subtype") == "init":
            model = line.get("model") or "?"
            text = f"claude started (model {model}, session {line.get('session_id', '?')})"
            return [Step(kind="start", at=at, text=text)]
        if line.get("subtype") == "api_retry":
            status = line.get("error_status") or line.get("error") or "an error"
            return [Step(kind="notice", at=at, text=f"API retry after {status} (attempt {line.get('attempt', '?')})")]
        return []
    if kind == "assistant":
        out: list[Step] = []
        for block in _content(line):
            if block.get("type") == "text" and block.get("text"):
                out.append(Step(kind="text", at=at, text=str(block["text"])))
            elif block.get("type") == "tool_use":
                name = str(block.get("name", "?"))
                summary = tool_summary(name, block.get("input"), TOOL_SUMMARY_CHARS)
                out.append(Step(kind="tool", at=at, text=f"{name} {summary}", tool=name, input=block.get("input")))
        return out
    if kind == "user":
        out = []
        for block in _content(line):
            if block.get("type") == "tool_result":
                text = _result_text(block.get("content"))
                out.append(Step(kind="result", at=at, text=text, is_error=bool(block.get("is_error"))))
            elif block.get("type") == "text" and block.get("text"):
                out.append(Step(kind="text", at=at, text=str(block["text"])))
        return out
    if kind == "control_request":
        request = line.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            name = str(request.get("tool_name", "?"))
            summary = tool_summary(name, request.get("input"), TOOL_SUMMARY_CHARS)
            return [Step(kind="approval", at=at, text=f"asked to use {name} {summary}", tool=name,
                         input=request.get("input"))]
        return []
    if kind == "result":
        seconds = f", {line['duration_ms'] / 1000:.1f} s" if isinstance(line.get("duration_ms"), int | float) else ""
        cost = f", ${line['total_cost_usd']:.4f}" if isinstance(line.get("total_cost_usd"), int | float) else ""
        failed = bool(line.get("is_error"))
        subtype = str(line.get("subtype", "?"))
        return [Step(kind="end", at=at, text=f"{'failed' if failed else 'done'} ({subtype}{seconds}{cost})",
                     is_error=failed, answer=str(line.get("result", "")), subtype=subtype)]
    if kind in ("stream_event", "control_response", "rate_limit_event"):
        return []  # deltas repeat the assistant messages; answers to our own requests
    return [Step(kind="other", at=at, text=f"({kind} line)")]


def _content(line: dict[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else json.dumps(content)
