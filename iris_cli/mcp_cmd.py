"""``iris mcp install|uninstall``: register the MCP shim with Claude Code."""

from __future__ import annotations

import typer

mcp_app = typer.Typer(help="The MCP server Claude Code launches ('iris mcp'), and its registration.")
