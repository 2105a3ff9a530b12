"""The official MCP Inspector CLI lists and calls the shim's tools (a third-party client).

It runs the shim the way ``iris mcp install --scope project`` registered it, from the
project's ``.mcp.json``. The inspector is the npm package, pinned at the last version
that runs on Node 20 (later ones need Node 22.19); it works offline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import REPO, Iris
from iris_mcp.tools import TOOLS

pytestmark = pytest.mark.claude

INSPECTOR_VERSION = "0.21.1"


def inspector_binary() -> Path:
    """The pinned inspector; like claude, the test FAILS (never skips) when it is missing."""
    path = Path(
        os.environ.get("IRIS_MCP_INSPECTOR") or REPO / ".cache/mcp-inspector/node_modules/.bin/mcp-inspector"
    )
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"MCP Inspector not found at {path}; run: npm install --prefix .cache/mcp-inspector "
            f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION} (or set IRIS_MCP_INSPECTOR)"
        )
    return path


def inspect(iris: Iris, project: Path, *args: str) -> Any:
    result = subprocess.run(
        [str(inspector_binary()), "--cli", "--config", ".mcp.json", "--server", "iris", *args],
        env=iris.env, cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def test_the_inspector_lists_and_calls_the_tools(iris: Iris) -> None:
    alpha = iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    installed = subprocess.run(
        [*iris_cli(), "mcp", "install", "--scope", "project"],
        env=iris.env, cwd=alpha, capture_output=True, text=True, timeout=60,
    )
    assert installed.returncode == 0, installed.stderr

    listed = inspect(iris, alpha, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"team_tell", "team_teams", "team_result", "team_cancel"} <= names and len(names) == len(TOOLS)

    who = inspect(iris, alpha, "--method", "tools/call", "--tool-name", "team_getTeamName")
    assert who["structuredContent"]["team"] == "alpha"  # from the folder it runs in

    told = inspect(
        iris, alpha, "--method", "tools/call", "--tool-name", "team_tell",
        "--tool-arg", "toTeam=beta", "--tool-arg", "message=hello from the inspector",
    )
    assert not told.get("isError")
    assert told["content"][0]["text"] == "echo #1: hello from the inspector"

    refused = inspect(
        iris, alpha, "--method", "tools/call", "--tool-name", "team_tell",
        "--tool-arg", "toTeam=nobody", "--tool-arg", "message=hi",
    )
    assert refused["isError"] and "known teams: alpha, beta" in refused["content"][0]["text"]


def iris_cli() -> list[str]:
    script = Path(sys.executable).parent / "iris"
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "iris_cli"]
