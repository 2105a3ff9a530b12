"""``iris mcp install|uninstall``: register the MCP shim with Claude Code.

``iris mcp`` itself (the server) is the callback of ``mcp_app`` in ``iris_cli.mcp_stdio``,
which ``iris_cli.entry`` runs directly (without rich and the rest of the CLI); this module
adds the two commands to that same app.

Scopes are Claude Code's: ``user`` (every project of this user; the default, since the
shim finds its team from the folder Claude Code starts it in), ``local`` (this project,
private) and ``project`` (this project's ``.mcp.json``, shared through the repository).
``project`` is written directly, so it needs no ``claude``; the others go through
``claude mcp add`` / ``claude mcp remove``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from iris_cli import mcp_stdio, render

SERVER_NAME = "iris"
# Where the shim must look for irisd if not in the default place: carried into the
# registration, because Claude Code starts the shim with its own environment.
CARRIED_ENV = ("IRIS_HOME", "IRIS_SOCKET")

mcp_app = mcp_stdio.mcp_app  # one app: the server (its callback) and these commands


class Scope(StrEnum):
    user = "user"
    local = "local"
    project = "project"


ScopeOption = Annotated[
    Scope,
    typer.Option(
        "--scope",
        help="user: every project; local: this project, only you; project: this project's .mcp.json.",
    ),
]
ClaudeOption = Annotated[
    str | None,
    typer.Option(
        "--claude",
        help="The claude executable (default: $IRIS_CLAUDE_BIN, the one next to iris, then 'claude' on PATH).",
    ),
]


def shim_command() -> list[str]:
    """How Claude Code should start the shim: this installation's ``iris`` script."""
    script = Path(sys.executable).parent / "iris"
    if os.access(script, os.X_OK):
        return [str(script), "mcp"]
    found = shutil.which("iris")
    if found:
        return [found, "mcp"]
    return [sys.executable, "-m", "iris_cli", "mcp"]


def carried_env() -> dict[str, str]:
    return {key: os.environ[key] for key in CARRIED_ENV if os.environ.get(key)}


def find_claude(claude: str | None) -> str:
    from iris_common import locate

    found = locate.find_claude(claude)
    if found is None:
        named = f" ({claude!r} is not an executable)" if claude else ""
        render.error(
            f"claude not found{named}; {locate.not_found_fix()}; or pass --claude PATH, "
            "or use --scope project to write this project's .mcp.json without it"
        )
        raise typer.Exit(1)
    return found


def run_claude(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        render.error(f"could not run {argv[0]}: {exc}")
        raise typer.Exit(1) from None


# --- .mcp.json --------------------------------------------------------------------------


def mcp_json_path() -> Path:
    return Path.cwd() / ".mcp.json"


def read_mcp_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        render.error(f"cannot read {path}: {exc}; fix or remove it, then try again")
        raise typer.Exit(1) from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        render.error(f"{path} is not an MCP config (no 'mcpServers' object)")
        raise typer.Exit(1)
    return data


def write_mcp_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    temporary.replace(path)  # never a half-written config


def portable_shim_command() -> list[str]:
    """For a shared ``.mcp.json``: plain ``iris`` when PATH finds this very installation,
    so the file works for everyone who has Iris on PATH; else the absolute path."""
    command = shim_command()
    found = shutil.which("iris")
    if found is not None and Path(found).resolve() == Path(command[0]).resolve():
        return ["iris", *command[1:]]
    return command


def install_project() -> Path:
    path = mcp_json_path()
    data = read_mcp_json(path)
    command, *args = portable_shim_command()
    entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
    if env := carried_env():
        entry["env"] = env
    data.setdefault("mcpServers", {})[SERVER_NAME] = entry
    write_mcp_json(path, data)
    return path


def uninstall_project() -> bool:
    path = mcp_json_path()
    data = read_mcp_json(path)
    servers = data.get("mcpServers", {})
    if SERVER_NAME not in servers:
        return False
    del servers[SERVER_NAME]
    if not servers and set(data) == {"mcpServers"}:
        path.unlink()  # it only ever held Iris
    else:
        write_mcp_json(path, data)
    return True


ALLOW_RULE = "mcp__iris"  # Claude Code's permission rule for every tool of the 'iris' server


def claude_settings_path() -> Path:
    """The user's Claude Code settings (``$CLAUDE_CONFIG_DIR/settings.json``): never a
    team's repository."""
    folder = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(folder).expanduser() / "settings.json"


def allow_iris_tools() -> tuple[Path, bool]:
    """Add ``mcp__iris`` to ``permissions.allow`` of the user's Claude settings, keeping
    everything else; (the file, whether it changed)."""
    path = claude_settings_path()
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError) as exc:
        render.error(f"cannot read {path}: {exc}; fix it, or add {ALLOW_RULE!r} to permissions.allow yourself")
        raise typer.Exit(1) from None
    permissions = data.setdefault("permissions", {}) if isinstance(data, dict) else None
    allow = permissions.setdefault("allow", []) if isinstance(permissions, dict) else None
    if not isinstance(allow, list):
        render.error(f"{path} has no permissions.allow list; add {ALLOW_RULE!r} to it yourself")
        raise typer.Exit(1)
    if ALLOW_RULE in allow:
        return path, False
    allow.append(ALLOW_RULE)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_mcp_json(path, data)
    return path, True


# --- the commands ------------------------------------------------------------------------


AllowOption = Annotated[
    bool,
    typer.Option(
        "--allow-tools",
        help="Also allow the Iris tools without asking (adds 'mcp__iris' to permissions.allow in your Claude "
        "settings, ~/.claude/settings.json): needed for headless 'claude -p', which cannot ask.",
    ),
]


@mcp_app.command()
def install(scope: ScopeOption = Scope.user, claude: ClaudeOption = None, allow_tools: AllowOption = False) -> None:
    """Register 'iris mcp' with Claude Code, so its sessions get the team_* tools."""
    if scope is Scope.project:
        path = install_project()
        render.out.print(f"added '{SERVER_NAME}' to {path} (Claude Code asks once before using it)")
    else:
        _install_for_user(scope, claude)
    if allow_tools:
        settings, changed = allow_iris_tools()
        done = "allowed" if changed else "already allowed"
        render.out.print(f"{done}: the Iris tools run without asking ({ALLOW_RULE!r} in {settings})")
    else:
        render.out.print(
            f"headless 'claude -p' cannot ask before a tool: allow the Iris tools with 'iris mcp install "
            f"--allow-tools' (adds {ALLOW_RULE!r} to permissions.allow in {claude_settings_path()}), or run "
            f"'claude -p --allowedTools {ALLOW_RULE} ...'",
        )


def _install_for_user(scope: Scope, claude: str | None) -> None:
    executable = find_claude(claude)
    env_flags = [flag for key, value in carried_env().items() for flag in ("-e", f"{key}={value}")]
    # Replace, not duplicate: 'claude mcp add' refuses a name that exists.
    run_claude([executable, "mcp", "remove", "--scope", scope.value, SERVER_NAME])
    added = run_claude(
        [executable, "mcp", "add", SERVER_NAME, "--scope", scope.value, *env_flags, "--", *shim_command()]
    )
    if added.returncode != 0:
        detail = (added.stderr or added.stdout).strip()
        render.error(f"'claude mcp add' failed: {detail}")
        raise typer.Exit(1)
    command = " ".join(shim_command())
    render.out.print(f"registered '{SERVER_NAME}' with Claude Code ({scope.value} scope): {command}")


@mcp_app.command()
def uninstall(scope: ScopeOption = Scope.user, claude: ClaudeOption = None) -> None:
    """Remove the 'iris' MCP server from Claude Code."""
    if scope is Scope.project:
        removed = uninstall_project()
        render.out.print(
            f"removed '{SERVER_NAME}' from {mcp_json_path()}" if removed else "nothing to remove"
        )
        return
    executable = find_claude(claude)
    removed_run = run_claude([executable, "mcp", "remove", "--scope", scope.value, SERVER_NAME])
    if removed_run.returncode != 0:
        detail = (removed_run.stderr or removed_run.stdout).strip()
        render.out.print(f"nothing to remove ({detail})" if detail else "nothing to remove")
        return
    render.out.print(f"removed '{SERVER_NAME}' from Claude Code ({scope.value} scope)")
