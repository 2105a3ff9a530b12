"""``iris mcp install|uninstall``: the shim registered with the real Claude Code CLI.

The tests that register it at user scope share one daemon (teams alpha and backend) and
one claude configuration, which each leaves as it found it: nothing registered, its
``settings.json`` as it was. The project-scope test needs no daemon."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Iris, started
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


def test_project_scope_writes_and_cleans_the_projects_mcp_json(iris: Iris) -> None:
    config = iris.root / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))

    installed = iris.cli("mcp", "install", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["other"] == {"command": "other-server"}  # left alone
    entry = servers["iris"]
    assert entry["args"][-1] == "mcp"
    assert entry["command"] == "iris" or Path(entry["command"]).exists()  # absolute unless on PATH

    script = Path(sys.executable).parent / "iris"
    on_path = iris.env | {"PATH": f"{script.parent}:{iris.env['PATH']}"}
    portable = subprocess.run(
        [str(script), "mcp", "install", "--scope", "project"],
        env=on_path, cwd=iris.root, capture_output=True, text=True, timeout=60,
    )
    assert portable.returncode == 0, portable.stderr
    assert json.loads(config.read_text())["mcpServers"]["iris"]["command"] == "iris"  # shareable
    # Claude Code starts the shim with its own environment: the daemon's location goes along.
    assert entry["env"] == {"IRIS_HOME": str(iris.home), "IRIS_SOCKET": str(iris.socket)}

    again = iris.cli("mcp", "install", "--scope", "project")  # idempotent
    assert again.returncode == 0 and set(json.loads(config.read_text())["mcpServers"]) == {"other", "iris"}

    removed = iris.cli("mcp", "uninstall", "--scope", "project")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(config.read_text()) == {"mcpServers": {"other": {"command": "other-server"}}}
    config.unlink()
    assert iris.cli("mcp", "install", "--scope", "project").returncode == 0
    assert iris.cli("mcp", "uninstall", "--scope", "project").returncode == 0
    assert not config.exists()  # it only ever held Iris


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    with started(tmp_path_factory.mktemp("mcp-install"), model_url=model.base_url, claude=claude_bin,
                 teams={"alpha": {}, "backend": {}}) as iris:
        yield iris


def registered(iris: Iris) -> bool:
    """Whether claude's user scope ($CLAUDE_CONFIG_DIR/.claude.json) holds the shim."""
    state = iris.claude_config / ".claude.json"
    return state.exists() and "iris" in json.loads(state.read_text()).get("mcpServers", {})


@pytest.fixture
def shared(daemon: Iris, claude_bin: Path) -> Iterator[Iris]:
    """The module's daemon; after the test, the shim unregistered and claude's settings
    as they were (a test that fails half-way leaves the next one a clean start)."""
    settings = daemon.claude_config / "settings.json"
    before = settings.read_text() if settings.exists() else None
    try:
        yield daemon
    finally:
        if registered(daemon):
            daemon.cli("mcp", "uninstall", "--claude", str(claude_bin))
        if before is None:
            settings.unlink(missing_ok=True)
        else:
            settings.write_text(before)


def test_user_scope_goes_through_claude_which_can_start_the_shim(shared: Iris, claude_bin: Path) -> None:
    iris = shared
    assert not registered(iris)
    installed = iris.cli("mcp", "install", "--claude", str(claude_bin))
    assert installed.returncode == 0, installed.stderr
    assert iris.cli("mcp", "install", "--claude", str(claude_bin)).returncode == 0  # replaces

    shown = subprocess.run(
        [str(claude_bin), "mcp", "get", "iris"],
        env=iris.env, cwd=iris.root, capture_output=True, text=True, timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "User config" in shown.stdout and "Connected" in shown.stdout, shown.stdout
    assert f"IRIS_SOCKET={iris.socket}" in shown.stdout

    removed = iris.cli("mcp", "uninstall", "--claude", str(claude_bin))
    assert removed.returncode == 0 and "removed 'iris'" in removed.stdout
    again = iris.cli("mcp", "uninstall", "--claude", str(claude_bin))
    assert again.returncode == 0 and "nothing to remove" in again.stdout and not registered(iris)

    missing = iris.cli("mcp", "install", "--claude", str(iris.root / "no-claude"))
    assert missing.returncode == 1 and "--scope project" in missing.stderr


def test_headless_claude_can_use_the_iris_tools_once_allowed(shared: Iris, claude_bin: Path) -> None:
    iris = shared
    asked = "@tool:mcp__iris__team_teams {}"

    def headless() -> str:
        ran = subprocess.run([str(claude_bin), "-p", asked], env=iris.env, cwd=iris.root, capture_output=True,
                             text=True, timeout=180)
        return ran.stdout + ran.stderr

    installed = iris.cli("mcp", "install", "--claude", str(claude_bin))
    assert installed.returncode == 0 and "--allow-tools" in installed.stdout  # says how, for claude -p
    refused = headless()
    assert "tool mcp__iris__team_teams failed:" in refused, refused  # claude -p cannot ask
    settings = iris.claude_config / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "theme": "dark"}))
    allowed = iris.cli("mcp", "install", "--claude", str(claude_bin), "--allow-tools")
    assert allowed.returncode == 0 and f"'mcp__iris' in {settings}" in allowed.stdout, allowed.stdout
    assert json.loads(settings.read_text()) == {"permissions": {"allow": ["Bash(ls)", "mcp__iris"]}, "theme": "dark"}
    answered = headless()
    assert "tool mcp__iris__team_teams said:" in answered and "alpha" in answered, answered
    again = iris.cli("mcp", "install", "--claude", str(claude_bin), "--allow-tools")
    assert "already allowed" in again.stdout and json.loads(settings.read_text())["permissions"]["allow"].count(
        "mcp__iris") == 1
    assert not (iris.root / ".claude").exists()  # nothing written into a project folder


def test_the_readmes_headless_command_works_as_written(shared: Iris, claude_bin: Path) -> None:
    # The README's per-run recipe, taken from README.md itself: its words in its order, the
    # placeholder prompt ("ask backend ...") made one the scripted model acts on.
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    (command,) = re.findall(r"`(claude -p [^`]*--allowedTools[^`]*)`", readme)
    argv = shlex.split(command)
    (placeholder,) = [i for i, word in enumerate(argv) if word.endswith("...")]
    argv[placeholder] = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "backend", "message": "hi"})
    argv[0] = str(claude_bin)
    iris = shared
    assert iris.cli("mcp", "install", "--claude", str(claude_bin)).returncode == 0  # no --allow-tools
    ran = subprocess.run(argv, env=iris.env, cwd=iris.root, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "tool mcp__iris__team_tell said:" in ran.stdout and "echo #1: hi" in ran.stdout, ran.stdout
