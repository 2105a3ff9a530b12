"""A tell's phase and a tool's input in words, the same for every front end (the CLI,
the MCP tools, the dashboard). Pure: no I/O."""

from __future__ import annotations

from typing import Any

from protocol.core_messages import TellPhase

TOOL_DETAIL_CHARS = 80


def tool_summary(tool: str, value: Any, limit: int = TOOL_DETAIL_CHARS) -> str:
    """A tool's input on one line: Bash's command, a file tool's path, a search's
    pattern, else the first text value, else compact JSON; cut to ``limit``."""
    import json  # here: a tell's phases rarely need it, and 'iris tell' starts without it

    if not isinstance(value, dict):
        text = "" if value is None else json.dumps(value, ensure_ascii=False)
    else:
        for key in ("command", "file_path", "notebook_path", "pattern", "url", "query", "path", "prompt"):
            if isinstance(value.get(key), str) and value[key]:
                text = value[key]
                break
        else:
            strings = [v for v in value.values() if isinstance(v, str) and v]
            text = strings[0] if strings else (json.dumps(value, ensure_ascii=False) if value else "")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe(phase: TellPhase) -> str:
    """The phase for people: "queued behind 2 tells", "running a tool: Bash `ls`", ..."""
    match phase.name:
        case "queued":
            queued = "queued"
            if phase.ahead > 0:
                queued += f" behind {phase.ahead} tell{'s' if phase.ahead != 1 else ''}"
            if phase.head is not None:
                queued += _head(phase.head, phase.head_id)
            return f"{queued}: {phase.detail}" if phase.detail else queued  # detail: a mesh home that is away
        case "waiting_for_slot":
            busy = f" ({phase.ahead} busy; settings.maxProcesses)" if phase.ahead else ""
            return f"waiting for a process slot{busy}"
        case "starting_claude":
            return "starting claude"
        case "waiting_for_model":
            return "waiting for the model"
        case "answering":
            return "the model is writing"
        case "running_tool":
            return f"running a tool: {_tool(phase)}"
        case "api_retry":
            return phase.detail or "claude is retrying the Anthropic API"
        case "awaiting_approval" if phase.server:
            return f"waiting for your input: {phase.server}: {phase.detail}".rstrip(": ")
        case "awaiting_approval":
            return f"awaiting your approval: {_tool(phase)}"
        case "remote":
            return phase.detail or "with the remote team"
        case "awaiting_input":
            asks = f": {phase.detail}" if phase.detail else ""
            return f"the remote team waits for input{asks}"
        case "compacting":
            return phase.detail or "compacting the conversation"
    return phase.name


def awaited_approval(phase: TellPhase) -> TellPhase | None:
    """The approval a tell waits for: its own, or the one the tell ahead of it waits for."""
    if phase.name == "awaiting_approval":
        return phase
    if phase.name == "queued" and phase.head is not None and phase.head.name == "awaiting_approval":
        return phase.head
    return None


def approve_command(approval_id: str) -> str:
    """How a person lets the approval through (irisd takes any unique prefix of an id)."""
    return f"iris approve {approval_id[:10]}"


def _head(head: TellPhase, head_id: str) -> str:
    """What the tell ahead of a queued one waits for, after "queued behind N tells"."""
    tell = f" {head_id[:10]}" if head_id else ""
    match head.name:
        case "awaiting_approval" if head.server:
            short = head.approval_id[:10]
            return (f"; tell{tell} ahead is {describe(head)}: answer with "
                    f"'iris approve {short} --field NAME=VALUE' (or 'iris deny {short}')")
        case "awaiting_approval":
            return (f"; tell{tell} ahead awaits your approval of {_tool(head)}: "
                    f"run '{approve_command(head.approval_id)}' (or 'iris deny {head.approval_id[:10]}')")
        case "running_tool":
            return f"; tell{tell} ahead is running a tool: {_tool(head)}"
        case "awaiting_input":
            return f"; tell{tell} ahead: {describe(head)}"
    return f" ({describe(head)})"


def _tool(phase: TellPhase) -> str:
    return f"{phase.tool} `{phase.detail}`" if phase.detail else phase.tool
