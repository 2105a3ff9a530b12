"""The ``iris`` executable. Kept light: ``iris mcp`` (launched by Claude Code for every
session) must not pay for importing rich and the rest of the CLI before the MCP server
starts, so it runs the ``mcp`` Typer app alone (the same app the full CLI mounts)."""

from __future__ import annotations

import sys

_CLI_ONLY = {"install", "uninstall", "--help", "-h"}


def main() -> None:
    args = sys.argv[1:]
    from iris_cli.utf8 import bad_argument

    if problem := bad_argument(args):
        print(f"iris: {problem}", file=sys.stderr)
        sys.exit(2)
    if args in (["status"], ["status", "--json"]):  # the hot path: no Typer, no rich
        from iris_cli.status_cmd import run_status

        sys.exit(run_status(as_json=args[1:] == ["--json"]))
    if args[:1] == ["mcp"] and not _CLI_ONLY.intersection(args[1:2]):
        from iris_cli.mcp_stdio import mcp_app

        mcp_app(args[1:], prog_name="iris mcp")
    from iris_cli.app import main as cli

    cli()
