"""A tell's phase and a tool's input in words, the same for every front end (the CLI,
the MCP tools, the dashboard). Pure: no I/O."""

from __future__ import annotations

import json
from typing import Any

from protocol.messages import TellPhase

TOOL_DETAIL_CHARS = 80


def tool_summary(tool: str, value: Any, limit: int = TOOL_DETAIL_CHARS) -> str:
    """A tool's input on one line: Bash's command, a file tool's path, a search's
    pattern, else the first text value, else compact JSON; cut to ``limit``."""
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
        case "awaiting_approval":
            return f"awaiting your approval: {_tool(phase)}"
        case "remote":
            return phase.detail or "with the remote team"
        case "awaiting_input":
            asks = f": {phase.detail}" if phase.detail else ""
            return f"the remote team waits for input{asks}"
    return phase.name


def _tool(phase: TellPhase) -> str:
    return f"{phase.tool} `{phase.detail}`" if phase.detail else phase.tool
