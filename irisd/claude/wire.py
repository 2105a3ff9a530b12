"""Lenient Structs for the JSON lines ``claude -p --output-format stream-json`` prints.

The CLI adds message types and fields between releases, so decoding never fails on
what it does not know: unknown fields are ignored, an unknown ``type`` becomes
``UnknownLine`` with the raw bytes kept, and a line that is not JSON at all becomes
``GarbageLine``. Only the fields Iris acts on are declared.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec


class _Line(msgspec.Struct, kw_only=True, tag_field="type"):
    pass


class SystemLine(_Line, tag="system"):
    subtype: str = ""
    session_id: str = ""
    # With subtype "api_retry": claude retries the Messages API after an error. Loosely
    # typed, so that a change of their types never hides the line.
    attempt: Any = None
    max_retries: Any = None
    retry_delay_ms: Any = None
    error_status: Any = None
    error: Any = None
    slash_commands: Any = None  # with subtype "init": the slash commands this claude knows
    status: Any = None  # with subtype "status": e.g. "compacting" while claude compacts the conversation
    compact_metadata: Any = None  # with subtype "compact_boundary": trigger, pre_tokens, post_tokens

    def commands(self) -> tuple[str, ...] | None:
        """The slash commands an ``init`` line names (None for other lines)."""
        if self.subtype != "init" or not isinstance(self.slash_commands, list):
            return None
        return tuple(str(c) for c in self.slash_commands if isinstance(c, str))

    def retry_notice(self) -> str | None:
        """For the people waiting, what an ``api_retry`` line means (None for other lines)."""
        if self.subtype != "api_retry":
            return None
        causes = [f"HTTP {self.error_status}" if self.error_status else "", str(self.error or "")]
        cause = " ".join(c for c in causes if c) or "an error"
        detail = f"attempt {self.attempt}" + (f" of {self.max_retries}" if self.max_retries else "")
        if isinstance(self.retry_delay_ms, int | float):
            detail += f", next in {self.retry_delay_ms / 1000:.1f} s"
        notice = f"claude is retrying the Anthropic API after {cause} ({detail})"
        if self.error_status in (401, 403) or "authentication" in cause:
            notice += "; check irisd's credentials (ANTHROPIC_API_KEY, or log in with 'claude')"
        return notice


class ContentBlock(msgspec.Struct, kw_only=True):
    type: str = ""
    text: str = ""
    name: str = ""  # tool_use: the tool
    input: Any = None  # tool_use: its input (loosely typed: only summarised)


class AssistantMessage(msgspec.Struct, kw_only=True):
    content: list[ContentBlock] = []


class AssistantLine(_Line, tag="assistant"):
    message: AssistantMessage = msgspec.field(default_factory=AssistantMessage)
    session_id: str = ""

    def text(self) -> str:
        return "".join(block.text for block in self.message.content if block.type == "text")

    def tool_uses(self) -> list[ContentBlock]:
        return [block for block in self.message.content if block.type == "tool_use"]


class UserMessage(msgspec.Struct, kw_only=True):
    content: Any = None


_LOCAL_OUTPUT = re.compile(r"<local-command-(?:stdout|stderr)>(.*?)</local-command-(?:stdout|stderr)>", re.S)


class UserLine(_Line, tag="user"):
    """A user turn echoed back (usually tool results; after a slash command, its output)."""

    message: UserMessage | None = None

    def command_output(self) -> str:
        """What a slash command printed (``<local-command-stdout>``), else ''."""
        content = self.message.content if self.message is not None else None
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and isinstance(b.get("text"), str)
        ] if isinstance(content, list) else []
        return "\n".join(m.strip() for t in texts for m in _LOCAL_OUTPUT.findall(t) if m.strip())


class StreamDelta(msgspec.Struct, kw_only=True):
    type: str = ""
    text: str = ""


class StreamInner(msgspec.Struct, kw_only=True):
    type: str = ""
    delta: StreamDelta | None = None
    content_block: ContentBlock | None = None  # content_block_start


class StreamEventLine(_Line, tag="stream_event"):
    event: StreamInner = msgspec.field(default_factory=StreamInner)

    def text_delta(self) -> str:
        """The text of a ``content_block_delta`` / ``text_delta`` event, else ''."""
        delta = self.event.delta
        if self.event.type == "content_block_delta" and delta and delta.type == "text_delta":
            return delta.text
        return ""


class ResultLine(_Line, tag="result"):
    subtype: str = ""
    is_error: bool = False
    result: str = ""
    duration_ms: int | None = None
    num_turns: int | None = None
    total_cost_usd: float | None = None
    session_id: str = ""
    usage: dict[str, Any] | None = None  # the last turn's own tokens
    model_usage: Any = msgspec.field(default=None, name="modelUsage")  # the session's, per model
    errors: list[str] = []


class ControlResponseBody(msgspec.Struct, kw_only=True):
    subtype: str = ""
    request_id: str = ""
    error: str = ""
    response: dict[str, Any] = {}  # what a request asked for (e.g. ``get_settings``'s settings)


class ControlResponseLine(_Line, tag="control_response"):
    response: ControlResponseBody = msgspec.field(default_factory=ControlResponseBody)


class ControlRequestBody(msgspec.Struct, kw_only=True):
    subtype: str = ""
    tool_name: str = ""
    input: dict[str, Any] = {}
    permission_suggestions: list[Any] | None = None
    # subtype "elicitation": one of claude's MCP servers asks its person for input
    mcp_server_name: str = ""
    message: str = ""
    requested_schema: dict[str, Any] = {}


class ControlRequestLine(_Line, tag="control_request"):
    request_id: str = ""
    request: ControlRequestBody = msgspec.field(default_factory=ControlRequestBody)


class CommandLifecycleLine(_Line, tag="command_lifecycle"):
    """A turn claude starts by itself (a queued command: another session's message, a
    background task's notification) is framed by ``state`` ``started`` ... ``completed``
    (2.1.330; turns written to its stdin have none)."""

    state: str = ""


class UnknownLine(msgspec.Struct, kw_only=True):
    """Valid JSON of a type Iris does not know; kept raw."""

    type: str


class GarbageLine(msgspec.Struct, kw_only=True):
    """Not a JSON object at all (a stray print, a crash dump)."""

    error: str


ClaudeLine = (
    SystemLine
    | AssistantLine
    | UserLine
    | StreamEventLine
    | ResultLine
    | ControlResponseLine
    | ControlRequestLine
    | CommandLifecycleLine
)
AnyLine = ClaudeLine | UnknownLine | GarbageLine


class _Envelope(msgspec.Struct):
    type: str = ""


_line_decoder = msgspec.json.Decoder(ClaudeLine)
_envelope_decoder = msgspec.json.Decoder(_Envelope)


def decode_line(raw: bytes) -> AnyLine:
    """Decode one stdout line; never raises."""
    try:
        return _line_decoder.decode(raw)  # type: ignore[no-any-return]
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        pass
    try:
        return UnknownLine(type=_envelope_decoder.decode(raw).type or "?")
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        return GarbageLine(error=str(exc))


def line_type(line: AnyLine) -> str:
    """claude's own name for the line's type ('result', 'stream_event', ...)."""
    match line:
        case UnknownLine():
            return line.type
        case GarbageLine():
            return "garbage"
    tag = line.__struct_config__.tag
    return str(tag)


_encoder = msgspec.json.Encoder()


def user_turn(text: str) -> bytes:
    """The stdin line for one user turn."""
    message = {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }
    return _encoder.encode(message) + b"\n"


def interrupt_request(request_id: str) -> bytes:
    """The control request that interrupts the running turn without killing the process."""
    message = {"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}}
    return _encoder.encode(message) + b"\n"


def flag_settings_request(request_id: str, settings: dict[str, Any]) -> bytes:
    """The control request that merges ``settings`` into claude's flag settings (the layer
    ``--settings`` sets; a key set to None removes it): how a spare adds, then removes, the
    hook that blocks its warm-up prompt (``irisd/pool/spares.py``)."""
    message = {"type": "control_request", "request_id": request_id,
               "request": {"subtype": "apply_flag_settings", "settings": settings}}
    return _encoder.encode(message) + b"\n"


def settings_request(request_id: str) -> bytes:
    """The control request that asks claude its settings (``effective``: merged from every
    source): a spare's warm-up asks whether the team's settings let a hook run."""
    message = {"type": "control_request", "request_id": request_id, "request": {"subtype": "get_settings"}}
    return _encoder.encode(message) + b"\n"


def context_usage_request(request_id: str) -> bytes:
    """The control request that asks claude what its context holds (system prompt, tools,
    skills, agents, memory files), counted locally (``detail: summary``: no model request).
    To answer it claude builds what a session's first turn sends the model: a spare asks it
    before any pair takes it, so that its first turn finds it built (``irisd/pool/spares.py``)."""
    message = {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "get_context_usage", "detail": "summary"},
    }
    return _encoder.encode(message) + b"\n"
