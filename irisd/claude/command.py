"""The command line of a team's claude child (its environment: ``environment.py``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from decimal import Decimal

# A pair's conversation belongs to Iris. Claude Code (2.1.224 and later) lets any other
# session of the user message a running claude (SendMessage): the child would take that
# as a turn of its own, outside every check of Iris. Children refuse such messages...
CHILD_SETTINGS = {"crossSessionInbound": "refuse"}
# ... and do not reach around Iris either: Claude Code's own cross-session tools are
# disallowed unless a team's allowedTools names them.
CROSS_SESSION_TOOLS = ("SendMessage", "ListAgents")


def child_system_prompt(team: str) -> str:
    """What a child is told about its place (``--append-system-prompt``)."""
    return (
        f"You are the Claude Code agent of team '{team}', answering messages that Iris "
        "relays to you from people and from other teams' agents. To ask another team, use "
        "the team_tell tool of the 'iris' MCP server (team_teams lists the teams). Claude "
        "Code's own cross-session messaging (SendMessage, ListAgents) does not reach teams; "
        "do not use it for that."
    )


def iris_mcp_config(*, team: str, parent_pair: str, socket: str) -> str:
    """The ``--mcp-config`` that gives a child Iris itself as an MCP server: the shim
    speaks as ``team`` and links the tells it sends to the pair the child serves."""
    server = {
        "command": sys.executable,
        # --no-autostart: if its irisd is gone, the child is being stopped anyway.
        "args": ["-m", "iris_cli", "mcp", "--team", team, "--no-autostart"],
        "env": {"IRIS_SOCKET": socket, "IRIS_PARENT_PAIR": parent_pair},
    }
    return json.dumps({"mcpServers": {"iris": server}})


def stream_json_argv(claude_path: str, *, session_id: str, resume: bool) -> list[str]:
    """``claude`` talking stream-json on stdio, starting or resuming ``session_id``: what
    every claude irisd runs (a pair's child, iris-agent) has in common."""
    return [
        claude_path,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--resume" if resume else "--session-id",
        session_id,
    ]


def claude_argv(
    claude_path: str,
    *,
    session_id: str,
    resume: bool,
    permissions: str = "ask",
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    mcp_config: str = "",
    max_budget_usd: float | None = None,
    system_prompt: str = "",
) -> list[str]:
    """``claude`` in long-lived stream-json mode, starting or resuming ``session_id``.

    ``permissions``: ``skip`` skips every check; ``ask`` and ``deny`` route each request
    that needs permission to irisd over stdio (``can_use_tool`` control requests).
    The child refuses other sessions' messages and has no cross-session tools of its own
    unless ``allowed_tools`` names them (see ``CHILD_SETTINGS``)."""
    argv = [
        *stream_json_argv(claude_path, session_id=session_id, resume=resume),
        "--include-partial-messages",
        "--settings",
        json.dumps(CHILD_SETTINGS),
    ]
    if system_prompt:
        argv += ["--append-system-prompt", system_prompt]
    allowed = list(allowed_tools)
    disallowed = list(disallowed_tools)
    disallowed += [tool for tool in CROSS_SESSION_TOOLS if not _names(allowed, tool)]
    if mcp_config:
        # The tools' table is loaded with the first claude started, not with irisd.
        from iris_mcp.tools import CHILD_ALLOWED_TOOLS

        # Iris's own tools need no permission prompt: the daemon guards them (loops, hops).
        argv += ["--mcp-config", mcp_config]
        # Not team_approve / team_deny: a team must not decide its own requests.
        allowed += [f"mcp__iris__{tool}" for tool in CHILD_ALLOWED_TOOLS]
    if permissions == "skip":
        argv.append("--dangerously-skip-permissions")
    else:
        argv += ["--permission-prompt-tool", "stdio"]
    # The options take several values: one argument per rule, since rules such as
    # "Bash(git status)" hold spaces.
    if allowed:
        argv += ["--allowedTools", *allowed]
    if disallowed:
        argv += ["--disallowedTools", *disallowed]
    if max_budget_usd is not None:
        argv += ["--max-budget-usd", format(Decimal(repr(max_budget_usd)), "f")]
    return argv


def _names(rules: Sequence[str], tool: str) -> bool:
    """Whether a rule of ``rules`` is about ``tool`` (``SendMessage``, ``SendMessage(...)``)."""
    return any(rule == tool or rule.startswith(tool + "(") for rule in rules)
