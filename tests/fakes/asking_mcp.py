"""A team's own MCP server that asks its person for input (for tests): its one tool,
``pick``, answers its first call with MCP 2026-07-28 ``input_required`` (a form: "Which
database?"), and the retry with what came back (``accept: {"name": ...}``, ``decline``,
``cancel``). Run as ``python -m fakes.asking_mcp`` (stdio), as a claude's MCP server."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

QUESTION = "Which database?"


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tool = types.Tool(name="pick", description="Pick a database (asks the person)", input_schema={"type": "object"})
    return types.ListToolsResult(tools=[tool])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    answer = (params.input_responses or {}).get("db")
    if answer is None:
        name = {"type": "string", "title": "Database"}
        schema = {"type": "object", "properties": {"name": name}, "required": ["name"]}
        form = types.ElicitRequestFormParams(message=QUESTION, requested_schema=schema)
        return types.InputRequiredResult(input_requests={"db": types.ElicitRequest(params=form)}, request_state="asked")
    said = answer.model_dump(mode="json", exclude_none=True)
    text = f"{said.get('action')}: {json.dumps(said.get('content'))}"
    return types.CallToolResult(content=[types.TextContent(text=text)])


async def main() -> None:
    server = Server("asker", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    trio.run(main)
