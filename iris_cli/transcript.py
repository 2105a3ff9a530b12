"""A tell's stored transcript (claude's stream-json lines) as a conversation for people:
what was asked, the text the model wrote, each tool call with its input and result,
approvals, API retries and the outcome. ``iris cache read --raw`` prints the lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from protocol.messages import TranscriptEntry
from protocol.phases import tool_summary

RESULT_LINES = 6  # of a tool's result


@dataclass(frozen=True)
class Shown:
    kind: str  # "text", "tool", "result", "approval", "notice", "start", "end", "other"
    text: str


def conversation(entries: list[TranscriptEntry]) -> list[Shown]:
    shown: list[Shown] = []
    for entry in entries:
        try:
            line = json.loads(entry.raw)
        except ValueError:
            shown.append(Shown("other", f"(not JSON: {entry.raw[:80]})"))
            continue
        if isinstance(line, dict):
            shown.extend(_one(line))
    return shown


def _one(line: dict[str, Any]) -> list[Shown]:
    kind = line.get("type")
    if kind == "system":
        if line.get("subtype") == "init":
            model = line.get("model") or "?"
            return [Shown("start", f"claude started (model {model}, session {line.get('session_id', '?')})")]
        if line.get("subtype") == "api_retry":
            status = line.get("error_status") or line.get("error") or "an error"
            return [Shown("notice", f"API retry after {status} (attempt {line.get('attempt', '?')})")]
        return []
    if kind == "assistant":
        out: list[Shown] = []
        for block in _content(line):
            if block.get("type") == "text" and block.get("text"):
                out.append(Shown("text", str(block["text"])))
            elif block.get("type") == "tool_use":
                name = str(block.get("name", "?"))
                out.append(Shown("tool", f"{name} {tool_summary(name, block.get('input'), 200)}"))
        return out
    if kind == "user":
        out = []
        for block in _content(line):
            if block.get("type") == "tool_result":
                text = _result_text(block.get("content"))
                lines = text.splitlines() or [""]
                more = f"\n… ({len(lines) - RESULT_LINES} more lines)" if len(lines) > RESULT_LINES else ""
                label = "error" if block.get("is_error") else "result"
                out.append(Shown("result", f"{label}: " + "\n".join(lines[:RESULT_LINES]) + more))
            elif block.get("type") == "text" and block.get("text"):
                out.append(Shown("text", str(block["text"])))
        return out
    if kind == "control_request":
        request = line.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            name = str(request.get("tool_name", "?"))
            return [Shown("approval", f"asked to use {name} {tool_summary(name, request.get('input'), 200)}")]
        return []
    if kind == "result":
        seconds = f", {line['duration_ms'] / 1000:.1f} s" if isinstance(line.get("duration_ms"), int | float) else ""
        cost = f", ${line['total_cost_usd']:.4f}" if isinstance(line.get("total_cost_usd"), int | float) else ""
        outcome = "failed" if line.get("is_error") else "done"
        return [Shown("end", f"{outcome} ({line.get('subtype', '?')}{seconds}{cost})")]
    if kind in ("stream_event", "control_response", "rate_limit_event"):
        return []  # deltas repeat the assistant messages; answers to our own requests
    return [Shown("other", f"({kind} line)")]


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
