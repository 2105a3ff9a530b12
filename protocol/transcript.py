"""A tell's transcript as steps: what claude did, read once from its stored stream-json lines.

``steps`` is the one reading of the lines (pure, no I/O); each front end only renders the
``Step``s its own way: ``iris cache read`` for people (iris_cli/render.py), ``team_cache_read``
for a model (iris_mcp/tools.py), the dashboard's conversation (irisd/dashboard/static/
transcript.js, which asks irisd for the steps: ``ReadTranscript(steps=True)``). A line that
is not JSON, or of a type Iris does not know, becomes an ``other`` step; token deltas and
claude's answers to Iris's own requests are left out, unread (the assistant line after the
deltas holds the text).

A result line's ``total_cost_usd`` and ``modelUsage`` are claude's running totals of the
session, not what the tell cost: given the tell (``booked``), its end step says what Iris
booked for it (the ledger's figure), so every front end shows one figure for one tell.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from protocol.messages import Step, StepKind, TellInfo, TranscriptEntry
from protocol.phases import tool_summary

__all__ = ["TOOL_SUMMARY_CHARS", "Step", "StepKind", "steps"]

TOOL_SUMMARY_CHARS = 200
SKIPPED = frozenset({"stream_event", "control_response", "rate_limit_event"})  # most of the lines: not parsed


def steps(entries: list[TranscriptEntry], booked: TellInfo | None = None) -> list[Step]:
    """The steps of the lines; with ``booked`` (the tell they are of), its end step
    carries the tell's own cost and tokens instead of claude's running totals."""
    out: list[Step] = []
    for entry in entries:
        if entry.type in SKIPPED:
            continue
        try:
            line = json.loads(entry.raw)
        except ValueError:
            out.append(Step(kind="other", at=entry.at, text=f"(not JSON: {entry.raw[:80]})"))
            continue
        if isinstance(line, dict):
            out.extend(_one(line, entry.at))
    return out if booked is None else _booked(out, booked)


def _booked(out: list[Step], tell: TellInfo) -> list[Step]:
    """The last end step gets the tell's figures; an earlier one (a claude that exited
    mid-tell) none of its own: the tell's figures are the sum."""
    ends = [i for i, step in enumerate(out) if step.kind == "end"]
    for i in ends:
        last = i == ends[-1]
        out[i] = _end(msgspec.structs.replace(
            out[i],
            cost_usd=tell.cost_usd if last else None,
            input_tokens=tell.input_tokens if last else None,
            output_tokens=tell.output_tokens if last else None,
        ))
    return out


def _end(step: Step) -> Step:
    """An end step's words, from its figures: outcome, time, cost."""
    seconds = f", {step.duration_s:.1f} s" if step.duration_s is not None else ""
    spent = f", ${step.cost_usd:.4f}" if step.cost_usd is not None else ""
    text = f"{'failed' if step.is_error else 'done'} ({step.subtype}{seconds}{spent})"
    return msgspec.structs.replace(step, text=text)


def _one(line: dict[str, Any], at: float) -> list[Step]:
    kind = line.get("type")
    if kind == "system":
        if line.get("subtype") == "init":
            version = line.get("claude_code_version")
            claude = f"claude {version}" if version else "claude"
            model = line.get("model") or "?"
            text = f"{claude} started (model {model}, session {line.get('session_id', '?')})"
            return [Step(kind="start", at=at, text=text)]
        if line.get("subtype") == "api_retry":
            cause = f"HTTP {line['error_status']}" if line.get("error_status") else str(line.get("error") or "an error")
            text = f"claude retries the Anthropic API after {cause} (attempt {line.get('attempt', '?')})"
            return [Step(kind="notice", at=at, text=text)]
        return []
    if kind == "assistant":
        out: list[Step] = []
        for block in _content(line):
            if block.get("type") == "text" and block.get("text"):
                out.append(Step(kind="text", at=at, text=str(block["text"])))
            elif block.get("type") == "thinking" and block.get("thinking"):
                out.append(Step(kind="thinking", at=at, text=str(block["thinking"])))
            elif block.get("type") == "tool_use":
                name = str(block.get("name", "?"))
                summary = tool_summary(name, block.get("input"), TOOL_SUMMARY_CHARS)
                out.append(Step(kind="tool", at=at, text=f"{name} {summary}", tool=name,
                                tool_id=str(block.get("id", "")), input=block.get("input")))
        return out
    if kind == "user":
        out = []
        for block in _content(line):
            if block.get("type") == "tool_result":
                text = _result_text(block.get("content"))
                out.append(Step(kind="result", at=at, text=text, is_error=bool(block.get("is_error")),
                                tool_id=str(block.get("tool_use_id", ""))))
            elif block.get("type") == "text" and block.get("text"):
                out.append(Step(kind="text", at=at, text=str(block["text"])))
        return out
    if kind == "control_request":
        request = line.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            name = str(request.get("tool_name", "?"))
            summary = tool_summary(name, request.get("input"), TOOL_SUMMARY_CHARS)
            return [Step(kind="approval", at=at, text=f"asked to use {name} {summary}", tool=name,
                         tool_id=str(request.get("tool_use_id", "")), input=request.get("input"))]
        return []
    if kind == "result":
        ms, cost = _number(line.get("duration_ms")), _number(line.get("total_cost_usd"))
        usage: dict[str, Any] = line["usage"] if isinstance(line.get("usage"), dict) else {}
        turns, tokens_in, tokens_out = (_whole(v) for v in (line.get("num_turns"), usage.get("input_tokens"),
                                                             usage.get("output_tokens")))
        return [_end(Step(kind="end", at=at, is_error=bool(line.get("is_error")), answer=str(line.get("result", "")),
                          subtype=str(line.get("subtype", "?")), duration_s=ms / 1000 if ms is not None else None,
                          turns=turns, cost_usd=cost, input_tokens=tokens_in, output_tokens=tokens_out))]
    if kind in SKIPPED:
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
    if isinstance(content, list):  # text parts as they are; an image or another part by its kind
        parts = [b for b in content if isinstance(b, dict)]
        return "\n".join(str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]" for b in parts)
    return "" if content is None else json.dumps(content)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
