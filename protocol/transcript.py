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

from protocol.messages import Step, StepKind, TellInfo, TranscriptEntry, TranscriptPage, TranscriptReply
from protocol.phases import tool_summary

__all__ = ["TOOL_SUMMARY_CHARS", "Step", "StepKind", "StepReader", "entries", "join", "steps"]

TOOL_SUMMARY_CHARS = 200
SKIPPED = frozenset({"stream_event", "control_response", "rate_limit_event"})  # most of the lines: not parsed


def steps(entries: list[TranscriptEntry], booked: TellInfo | None = None) -> list[Step]:
    """The steps of the lines; with ``booked`` (the tell they are of), its end step
    carries the tell's own cost and tokens instead of claude's running totals."""
    reader = StepReader(booked=booked is not None)
    return [*reader.feed(entries), *reader.finish(booked)]


class StepReader:
    """``steps`` in pieces, for a transcript read page by page: ``feed`` each page's lines,
    get the steps known so far; ``finish`` with the tell gives the rest.

    With ``booked``, only the LAST end step gets the tell's figures (an earlier one, of a
    claude that exited mid-tell, none): so an end step and the steps after it are held
    until the next end step or ``finish``. A tell's result line is its last line or nearly,
    so what is held is a few steps, not the transcript."""

    def __init__(self, *, booked: bool = True) -> None:
        self.booked = booked
        self._held: list[Step] = []  # from the latest end step on (with booked)

    def feed(self, entries: list[TranscriptEntry]) -> list[Step]:
        out: list[Step] = []
        for entry in entries:
            if entry.type in SKIPPED:
                continue
            try:
                line = json.loads(entry.raw)
            except ValueError:
                self._add(out, Step(kind="other", at=entry.at, text=f"(not JSON: {entry.raw[:80]})"))
                continue
            if isinstance(line, dict):
                for step in _one(line, entry.at):
                    self._add(out, step)
        return out

    def _add(self, out: list[Step], step: Step) -> None:
        if not self.booked:
            out.append(step)
        elif step.kind == "end":
            if self._held:  # an earlier end: none of the tell's figures
                out.extend([_unbooked(self._held[0]), *self._held[1:]])
            self._held = [step]
        elif self._held:
            self._held.append(step)
        else:
            out.append(step)

    def finish(self, booked: TellInfo | None) -> list[Step]:
        """The steps held back; the last end step with ``booked``'s figures."""
        held, self._held = self._held, []
        if not held or booked is None:
            return held
        end = _end(msgspec.structs.replace(
            held[0], cost_usd=booked.cost_usd, input_tokens=booked.input_tokens, output_tokens=booked.output_tokens
        ))
        return [end, *held[1:]]


def _unbooked(step: Step) -> Step:
    return _end(msgspec.structs.replace(step, cost_usd=None, input_tokens=None, output_tokens=None))


_packed = msgspec.msgpack.Decoder(list[TranscriptEntry])


def entries(page: TranscriptPage) -> list[TranscriptEntry]:
    """A page's lines: those ``packed`` (decoded here, in C), then its ``entries``."""
    if not page.packed:
        return page.entries
    return [*_packed.decode(page.packed), *page.entries] if page.entries else _packed.decode(page.packed)


def join(pages: list[TranscriptPage], last: TranscriptReply) -> TranscriptReply:
    """A paged ``ReadTranscript``'s pieces as one reply (what irisd sends unpaged)."""
    return msgspec.structs.replace(
        last,
        entries=[entry for page in pages for entry in entries(page)] or last.entries,
        steps=[step for page in pages for step in page.steps] or last.steps,
    )


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
