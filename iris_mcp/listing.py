"""What an MCP client learns before its first call, in its JSON wire form and without the
MCP SDK: the server's description (``server/discover``) and the tools (``tools/list``).

The shim's SDK server lists the tools built from these same dicts (``shim.mcp_tool_list``),
and irisd's ``/mcp`` answers a client's ``server/discover`` and ``tools/list`` of protocol
2026-07-28 with them directly (``irisd/http/mcp.py``): a claude child asks both as it
starts, most never call a tool, and importing the SDK costs about a second of CPU.
``tests/subsystem/test_mcp_listing.py`` checks that both answers are the SDK's own.
"""

from __future__ import annotations

import functools
from typing import Any

from iris_common import __version__
from iris_mcp.tools import AGENT_PROPOSES, READ_ONLY_TOOLS, TOOLS, TOOLS_BY_NAME, input_schema

MODERN_VERSION = "2026-07-28"  # the protocol era of server/discover (claude 2.1.330 speaks it)
SERVER_NAME, SERVER_TITLE = "iris", "Iris"
SERVER_INFO = {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}  # who answers, in each result
INSTRUCTIONS = (
    "Iris connects you with the Claude Code agents of other projects (teams). team_teams lists "
    "them; team_tell asks one and returns its answer (each pair of teams keeps its own "
    "conversation); team_result fetches an answer that took longer than the call's timeout."
)


def offered_tools(*, read_only: bool = False, proposes: bool = False) -> tuple[str, ...]:
    """The tools a shim offers: all of them, or (``read_only``: iris-agent) those that read,
    with (``proposes``) those irisd files as approvals."""
    return tuple(TOOLS_BY_NAME) if not read_only else READ_ONLY_TOOLS + (AGENT_PROPOSES if proposes else ())


def tool_dicts(offered: tuple[str, ...]) -> list[dict[str, Any]]:
    """The ``tools`` of a ``tools/list`` result, as sent."""
    return [
        {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": input_schema(tool.args),
            "annotations": {
                "title": tool.title,
                "readOnlyHint": tool.read_only,
                "destructiveHint": tool.destructive,
                "idempotentHint": tool.idempotent,
                "openWorldHint": False,
            },
        }
        for tool in TOOLS
        if tool.name in offered
    ]


@functools.cache  # every child asks as it starts; the schemas are made once (read only: never changed)
def list_result(offered: tuple[str, ...]) -> dict[str, Any]:
    """A ``tools/list`` result of protocol 2026-07-28."""
    return {**_complete(), "tools": tool_dicts(offered)}


@functools.cache
def discover_result() -> dict[str, Any]:
    """A ``server/discover`` result of protocol 2026-07-28."""
    return {
        **_complete(),
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": INSTRUCTIONS,
        "supportedVersions": [MODERN_VERSION],
    }


def _complete() -> dict[str, Any]:
    """What every result of this era carries: how it may be cached, and who answered."""
    return {
        "cacheScope": "private",
        "resultType": "complete",
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
    }
