"""A scripted, deterministic stand-in for the Anthropic Messages API.

The pure half: a request body in, a reply plan out, the plan's events and
bodies out (no sockets, threads or clock). ``scripted_model.model`` serves it
over HTTP. Stdlib only.

The directive language
======================

The reply is chosen by the *prompt*: the last text block of the last user
turn, where ``<system-reminder>`` blocks added by the CLI, ``tool_result``
blocks and trailing ``"system"`` messages are ignored. (The last block,
because after a failed turn the CLI sends the failed prompt and the new one
as two text blocks of one merged user message.)

Directives are tokens at the start of the prompt, ``@name`` or
``@name:arg``, any number of them, separated by white space; the *free
text* is what follows. The first token that is not a known directive starts
the free text, so ``@someone hi`` is plain free text.

``N`` below is the number of user prompts in the conversation: the text
blocks of ``"user"`` messages, not counting ``<system-reminder>`` blocks and
the CLI's ``[Request interrupted by user]`` markers (messages that only
carry tool results add nothing). The second turn of a session answers
``#2``, also when the first one failed or was interrupted.

(no directive)
    Reply ``echo #N: <free text>``.
``@chunks:K``
    Stream the reply in exactly K deltas (``text_delta``, or
    ``input_json_delta`` for a tool call). Without it a text reply is
    streamed one word (with its surrounding blanks) per delta and a tool
    input in one delta.
``@slow:MS``
    Sleep MS milliseconds before each delta.
``@gate:NAME``
    Send the status line and everything up to the first delta, then hold
    until the test calls ``ScriptedModel.open_gate(NAME)`` (at once if it
    already did), then send the rest (a non-streamed request: the whole
    message once the gate is open). For a partial answer that waits for the
    test, not for the clock.
``@hang``
    Never answer: read the request, send nothing (not even a status line)
    and hold the connection until the client goes away or ``stop()`` is
    called.
``@stall``
    Send the status line, ``message_start``, the first content block start
    and the first delta, then hold like ``@hang``.
``@ask``
    Reply ``Do you want me to go ahead? (echo #N: <free text>)``.
``@long:W``
    Reply ``word1 word2 ... wordW`` (W deltas unless ``@chunks``).
``@tool:NAME <json object>``
    Call tool NAME with the JSON object in the free text as its input (an
    empty free text means ``{}``): one ``tool_use`` block, ``stop_reason``
    ``"tool_use"``.
``@again:K``
    With ``@tool``: call the tool K times in a row in the same turn (each call
    after the previous one's result), then answer with the last result as
    below. (Without it, a turn calls its tool once.)
``@error:STATUS [message]``
    Answer HTTP STATUS (400-599) with an Anthropic error body, e.g.
    ``{"type": "error", "error": {"type": "invalid_request_error",
    "message": "scripted error 400"}}``; the free text, if any, is the
    message.
``@flaky:K``
    Answer HTTP 529 (overloaded) to the first K requests of this turn, then
    as if the directive were absent: the CLI retries after about 0.5 s,
    announcing each retry with a ``system``/``api_retry`` line.

A subagent's prompt (the ``prompt`` input of the ``Agent`` tool) is a
prompt like any other, so directives work inside subagents too.

Once a turn has called a tool, every later request of that turn (the one
carrying the ``tool_result``, or one sent for a background-task
notification) is answered ``tool NAME said: <result text>``, or ``tool NAME
failed: <result text>`` when ``is_error``, one line per result of the latest
tool-result message; so a ``@tool`` turn never loops. Only ``@chunks`` and
``@slow`` still apply to that answer.

Precedence: ``@flaky`` (its first K requests), then ``@error``, then the tool follow-up, then ``@tool``, then
``@long`` (the words) and ``@ask`` (wraps them). ``@hang``, ``@stall``,
``@gate``, ``@chunks`` and ``@slow`` shape how the answer is delivered (``@stall`` on a
non-streamed request holds like ``@hang``). A directive with a bad argument
(``@chunks:x``, ``@tool:Bash not-json``) gets a plain text reply starting
with ``scripted model:`` that says what is wrong.

TCK mode
========

``ScriptedModel(tck=True)`` (``python -m scripted_model --tck``) answers a
prompt that holds a message id of the official A2A TCK (``tck-…`` or
``test-resubscribe-message-id…``, anywhere in the prompt) as the TCK's
scenario for its prefix says (``scripted_model/tck.py``), before any
directive; a TCK id of no scenario, and every other prompt, is answered as
above, as is a turn's tool follow-up.

Side requests
=============

Measured with claude 2.1.330 in ``-p`` stream-json mode: each model call of
the main loop (and of a subagent) is a streamed ``POST
/v1/messages?beta=true`` with ``tools``, ``thinking`` (``adaptive``, even
with ``MAX_THINKING_TOKENS=0``) and ``context_management``; with ``--tools
""`` the tools list is empty but the other two stay. The CLI's one-shot
helper requests (tool-use summaries with
``CLAUDE_CODE_EMIT_TOOL_USE_SUMMARIES=1``, session titles, model checks)
have ``tools: []`` and neither of the other two keys. Such a *side request*
always gets a prompt, short, plain answer (``echo #N: ok``), never a hang, an
error or a tool call, whatever its text says. (In plain ``-p`` use none
were seen: with the CLI's non-essential traffic off, one turn is exactly
one request, plus one per tool round trip.) The model name does not tell
them apart (``--model haiku`` makes the main loop use a haiku model).
The CLI's forked side queries (compaction, prompt suggestions, agent
summaries) look like main-loop requests but end with a user message of
their own, which holds no directive, so they get an echo too.

Other endpoints
===============

``POST /v1/messages/count_tokens`` answers ``{"input_tokens": n}`` with a
small deterministic n. ``GET``/``HEAD /api/hello`` (the CLI's start-up
probe when non-essential traffic is allowed) answers 200. ``GET
/v1/models`` lists one model. Anything else is a 404 in the Anthropic error
format; a body that is not a JSON object is a 400.

What the CLI does with faults (2.1.330)
=======================================

``@hang``: the CLI sends one request and waits silently, with no output
line and no retry, for at least 330 s (measured; its request time-out is
600 s). A prompt sent meanwhile is queued. Killing the CLI, an interrupt
control request, or ``stop()`` ends the wait.

``@stall``: with ``--include-partial-messages`` the first delta shows up as
a ``stream_event``; then silence. After about 300 s without data the CLI
drops the stream and sends the same request again without streaming
(``"stream": false``), which ``@stall`` holds too.

``@error:400``: the CLI retries at once with reduced features (6 requests
within about 0.5 s), then ends the turn with a ``result`` line with
``is_error: true`` and ``result`` ``"API Error: 400 <message>"``; the
process takes the next turn normally (422 behaves the same). 403, 404 and
413 end the turn after 1-2 requests but with canned texts. 401, 409, 429,
500 and 529 are retried with exponential back-off (delays of 0.5, 1, 2, 5,
9, 16, 39 s seen, each announced by a ``system``/``api_retry`` line), so
the turn looks stuck for minutes. Prefer ``@error:400`` for a failing turn.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from scripted_model.tck import scenario_for

JSON = dict[str, Any]
Event = tuple[str, JSON]
Mode = Literal["answer", "stall", "hang"]

SIDE_REPLY = "ok"
"""Free text of the answer to a side request (``echo #N: ok``)."""

_CLI_TEXTS = ("<system-reminder>", "[Request interrupted by user")
"""Text blocks that start like this are the CLI's, not the user's."""
_DIRECTIVE = re.compile(r"@([a-z]+)(?::(\S*))?(?=\s|$)")
_KNOWN = frozenset({"chunks", "slow", "hang", "stall", "gate", "ask", "tool", "long", "error", "flaky", "again"})
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class BadDirective(ValueError):
    """A directive's argument (or a tool call's input) cannot be used."""


@dataclass(frozen=True)
class Directive:
    """One ``@name`` or ``@name:arg`` token."""

    name: str
    arg: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """A ``tool_use`` block to emit."""

    name: str
    input: JSON


@dataclass(frozen=True)
class Reply:
    """How to answer one ``/v1/messages`` request.

    ``mode`` is ``"answer"`` (send everything), ``"stall"`` (send up to the
    first delta, then hold) or ``"hang"`` (send nothing, hold). A set
    ``error_status`` wins over everything else.
    """

    text: str = ""
    tool: ToolCall | None = None
    chunks: int | None = None
    delay_s: float = 0.0
    mode: Mode = "answer"
    error_status: int | None = None
    fail_first: int = 0  # answer 529 to this many requests of the turn first
    side: bool = False  # a side request (see the module docstring)
    gate: str = ""  # after the first delta, wait for ``ScriptedModel.open_gate(gate)``


def parse_directives(text: str) -> tuple[list[Directive], str]:
    """Split ``text`` into its leading directives and the free text."""
    directives: list[Directive] = []
    pos = 0
    while True:
        start = len(text) - len(text[pos:].lstrip())
        match = _DIRECTIVE.match(text, start)
        if match is None or match.group(1) not in _KNOWN:
            return directives, text[start:].strip()
        directives.append(Directive(match.group(1), match.group(2)))
        pos = match.end()


def _messages(body: JSON) -> list[JSON]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def _blocks(message: JSON) -> list[JSON]:
    """The content blocks of a message; string content is one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _prompts(message: JSON) -> list[str]:
    """The user's own text blocks of a message (no reminders, no results)."""
    if message.get("role") != "user":
        return []
    texts = (str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text")
    return [t for t in texts if not t.lstrip().startswith(_CLI_TEXTS)]


def count_turns(body: JSON) -> int:
    """``N``: the number of user prompts in the conversation."""
    return sum(len(_prompts(m)) for m in _messages(body))


def user_text(body: JSON) -> str:
    """The prompt: the last text block of the last user turn."""
    for message in reversed(_messages(body)):
        prompts = _prompts(message)
        if prompts:
            return prompts[-1].strip()
    return ""


def is_side_request(body: JSON) -> bool:
    """True for the CLI's own helper requests (see "Side requests")."""
    thinking = body.get("thinking")
    thinking_on = isinstance(thinking, dict) and thinking.get("type") != "disabled"
    return not body.get("tools") and not thinking_on and "context_management" not in body


def _turn_tail(body: JSON) -> list[JSON]:
    """The messages after the one that started the current user turn."""
    messages = _messages(body)
    for index in range(len(messages) - 1, -1, -1):
        if _prompts(messages[index]):
            return messages[index + 1 :]
    return messages


def _result_text(block: JSON) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (c for c in content if isinstance(c, dict) and c.get("type") == "text")
        return "\n".join(str(c.get("text", "")) for c in texts)
    return ""


def tool_calls_in_turn(body: JSON) -> int:
    """How many tool calls the current turn has made so far."""
    return sum(
        1
        for m in _turn_tail(body)
        if m.get("role") == "assistant"
        for b in _blocks(m)
        if b.get("type") == "tool_use"
    )


def tool_follow_up(body: JSON) -> str | None:
    """The answer after this turn's tool call, or None if it made none."""
    tail = _turn_tail(body)
    names = {
        str(b.get("id")): str(b.get("name"))
        for m in tail
        if m.get("role") == "assistant"
        for b in _blocks(m)
        if b.get("type") == "tool_use"
    }
    if not names:
        return None
    for message in reversed(tail):
        results = [b for b in _blocks(message) if b.get("type") == "tool_result"]
        if message.get("role") == "user" and results:
            return "\n".join(_describe_result(b, names) for b in results)
    return "tool call without a result"


def _describe_result(block: JSON, names: dict[str, str]) -> str:
    name = names.get(str(block.get("tool_use_id")), "?")
    verb = "failed" if block.get("is_error") else "said"
    return f"tool {name} {verb}: {_result_text(block)}"


def _int_arg(directive: Directive, low: int, high: int) -> int:
    try:
        value = int(directive.arg or "")
    except ValueError:
        raise BadDirective(f"@{directive.name} needs a number, got {directive.arg!r}") from None
    if not low <= value <= high:
        raise BadDirective(f"@{directive.name}:{value} is outside {low}..{high}")
    return value


def _tool_call(directive: Directive, free_text: str) -> ToolCall:
    if not directive.arg:
        raise BadDirective("@tool needs a tool name: @tool:NAME {json}")
    if not free_text:
        return ToolCall(directive.arg, {})
    try:
        value, _ = json.JSONDecoder().raw_decode(free_text)
    except json.JSONDecodeError as exc:
        raise BadDirective(f"@tool:{directive.arg} input is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadDirective(f"@tool:{directive.arg} input must be a JSON object")
    return ToolCall(directive.arg, value)


def _plan(body: JSON) -> Reply:
    reply = _plan_answer(body)
    flaky = next((d for d in parse_directives(user_text(body))[0] if d.name == "flaky"), None)
    return reply if flaky is None else replace(reply, fail_first=_int_arg(flaky, 1, 100))


def _plan_answer(body: JSON) -> Reply:
    directives, free_text = parse_directives(user_text(body))
    by_name = {d.name: d for d in directives}
    if "error" in by_name:
        return Reply(text=free_text, error_status=_int_arg(by_name["error"], 400, 599))
    chunks = _int_arg(by_name["chunks"], 1, 100_000) if "chunks" in by_name else None
    delay_s = _int_arg(by_name["slow"], 0, 3_600_000) / 1000 if "slow" in by_name else 0.0
    follow_up = tool_follow_up(body)
    again = _int_arg(by_name["again"], 1, 100) if "again" in by_name else 1
    if follow_up is not None and "tool" in by_name and tool_calls_in_turn(body) < again:
        return Reply(tool=_tool_call(by_name["tool"], free_text), chunks=chunks, delay_s=delay_s)
    if follow_up is not None:
        return Reply(text=follow_up, chunks=chunks, delay_s=delay_s)
    mode: Mode = "hang" if "hang" in by_name else "stall" if "stall" in by_name else "answer"
    gate = by_name["gate"].arg or "" if "gate" in by_name else ""
    if "gate" in by_name and not gate:
        raise BadDirective("@gate needs a name: @gate:NAME")
    if "tool" in by_name:
        tool = _tool_call(by_name["tool"], free_text)
        return Reply(tool=tool, chunks=chunks, delay_s=delay_s, mode=mode, gate=gate)
    if "long" in by_name:
        count = _int_arg(by_name["long"], 1, 1_000_000)
        text = " ".join(f"word{i}" for i in range(1, count + 1))
    else:
        text = f"echo #{count_turns(body)}: {free_text}"
    if "ask" in by_name:
        text = f"Do you want me to go ahead? ({text})"
    return Reply(text=text, chunks=chunks, delay_s=delay_s, mode=mode, gate=gate)


def plan_reply(body: JSON, *, tck: bool = False) -> Reply:
    """Decide how to answer a ``/v1/messages`` request body (``tck``: see "TCK mode")."""
    if is_side_request(body):
        return Reply(text=f"echo #{count_turns(body)}: {SIDE_REPLY}", side=True)
    scenario = scenario_for(user_text(body)) if tck and tool_follow_up(body) is None else None
    if scenario is not None:
        return Reply(text=scenario.text, chunks=scenario.chunks, delay_s=scenario.delay_s)
    try:
        return _plan(body)
    except BadDirective as exc:
        return Reply(text=f"scripted model: {exc}")


def split_chunks(text: str, count: int | None) -> list[str]:
    """Cut ``text`` into ``count`` pieces (default: one per word).

    Pieces follow word boundaries while there are enough words, else
    character boundaries (empty pieces only if ``count > len(text)``); they
    always join back to ``text``.
    """
    words: list[str] = re.findall(r"\s*\S+\s*", text) or [text]
    if count is None:
        return words
    units = words if count <= len(words) else list(text)
    bounds = [i * len(units) // count for i in range(count + 1)]
    return ["".join(units[lo:hi]) for lo, hi in itertools.pairwise(bounds)]


def deltas(reply: Reply) -> list[JSON]:
    if reply.tool is not None:
        pieces = split_chunks(json.dumps(reply.tool.input), reply.chunks or 1)
        return [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    pieces = split_chunks(reply.text, reply.chunks)
    return [{"type": "text_delta", "text": p} for p in pieces]


def _usage(body: JSON, output_tokens: int) -> JSON:
    """Small deterministic token counts."""
    return {
        "input_tokens": 10 * len(_messages(body)) + 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def message_json(reply: Reply, body: JSON, msg_id: str, tool_id: str) -> JSON:
    """The complete (non-streamed) message for ``reply``."""
    if reply.tool is not None:
        block = {"type": "tool_use", "id": tool_id, "name": reply.tool.name}
        content = [{**block, "input": reply.tool.input}]
    else:
        content = [{"type": "text", "text": reply.text}]
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model", "scripted")),
        "content": content,
        "stop_reason": "tool_use" if reply.tool is not None else "end_turn",
        "stop_sequence": None,
        "usage": _usage(body, len(deltas(reply))),
    }


def stream_events(reply: Reply, body: JSON, msg_id: str, tool_id: str) -> list[Event]:
    """The server-sent events of a streamed answer, in order."""
    message = message_json(reply, body, msg_id, tool_id)
    first: JSON = dict(message["content"][0])
    if reply.tool is not None:
        first["input"] = {}
    else:
        first["text"] = ""
    start = {**message, "content": [], "stop_reason": None, "usage": _usage(body, 1)}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    output = {"output_tokens": message["usage"]["output_tokens"]}
    events: list[Event] = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": first}),
        *(("content_block_delta", {"index": 0, "delta": d}) for d in deltas(reply)),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": stop, "usage": output}),
        ("message_stop", {}),
    ]
    return [(name, {"type": name, **data}) for name, data in events]


def error_json(status: int, message: str) -> JSON:
    """An error body in the Anthropic API's format."""
    default = "api_error" if status >= 500 else "invalid_request_error"
    kind = _ERROR_TYPES.get(status, default)
    return {"type": "error", "error": {"type": kind, "message": message}}


def count_tokens_json(body: JSON) -> JSON:
    """The answer to ``/v1/messages/count_tokens``."""
    return {"input_tokens": _usage(body, 0)["input_tokens"]}


MODELS_PAGE: JSON = {
    "data": [
        {
            "type": "model",
            "id": "scripted",
            "display_name": "Scripted model",
            "created_at": "2025-01-01T00:00:00Z",
        }
    ],
    "has_more": False,
    "first_id": "scripted",
    "last_id": "scripted",
}
