"""What the real claude children get in their environment, when irisd was started from
inside a Claude Code session (as ``iris mcp`` does): what Iris decides, nothing more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Iris

SESSION = {
    "CLAUDE_CODE_SESSION_ID": "11111111-2222-3333-4444-555555555555",
    "CLAUDE_PROJECT_DIR": "/somewhere/else",
    "CLAUDE_CODE_MESSAGING_SOCKET": "/tmp/cc-socks/x.sock",
    "CLAUDE_CODE_MESSAGING_TOKEN": "secret-token",
    "CLAUDECODE": "1",
    "SOME_SHELL_VARIABLE": "from the shell",
}


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    return dict(entry.split("=", 1) for entry in raw.split("\0") if entry)


@pytest.mark.claude
def test_children_get_the_allowlist_irisd_env_and_the_teams_env_only(iris: Iris) -> None:
    iris.add_team("alpha", env={"TEAM_VARIABLE": "team value"})
    iris.env.update(SESSION)
    (iris.home / "irisd.env").write_text("FILE_VARIABLE=file value\nIRIS_SOCKET=/ignored\n")
    iris.start()
    result = iris.cli("tell", "alpha", "hello")
    assert result.returncode == 0, result.stderr + iris.log()[-2000:]
    assert result.stdout == "echo #1: hello\n"  # claude works with only what it was given

    status = iris.cli_json("status")
    (pid,) = [p["pid"] for p in status["processes"] if p["pid"]]
    env = environ_of(pid)
    assert not set(SESSION) & set(env), set(SESSION) & set(env)
    assert env["TEAM_VARIABLE"] == "team value" and env["FILE_VARIABLE"] == "file value"
    assert env["CLAUDE_CONFIG_DIR"] == str(iris.claude_config)
    assert env["ANTHROPIC_BASE_URL"] == iris.env["ANTHROPIC_BASE_URL"]
    assert "IRIS_SOCKET" not in env  # irisd.env's IRIS_* are irisd's own

    names = status["environment"]["alpha"]
    assert {"TEAM_VARIABLE", "FILE_VARIABLE", "PATH", "HOME", "ANTHROPIC_API_KEY"} <= set(names)
    assert set(names) <= set(env)  # the marker is added at spawn
    shown = json.dumps(status)
    assert "team value" not in shown and "test-key" not in shown  # names, never values


def test_a_bad_irisd_env_stops_irisd_with_the_line(iris: Iris) -> None:
    iris.add_team("alpha")
    (iris.home / "irisd.env").write_text("GOOD=1\nexport\n")
    iris.write_config()
    process = iris.start(wait=False)
    assert process.wait(timeout=30) == 2
    iris.process = None
    assert f"{iris.home / 'irisd.env'}, line 2: expected NAME=VALUE" in iris.log()


@pytest.mark.claude
def test_a_tell_without_credentials_says_irises_fix_and_reload_applies_it(iris: Iris) -> None:
    iris.add_team("alpha")
    del iris.env["ANTHROPIC_API_KEY"]  # no key, no login: claude answers "Not logged in"
    iris.start()
    failed = iris.cli_json("tell", "alpha", "hello", ok=False)
    assert failed["status"] == "failed", failed
    assert failed["error"].startswith("Not logged in · Please run /login: "), failed
    assert "put ANTHROPIC_API_KEY=... in $IRIS_HOME/irisd.env" in failed["error"]
    (iris.home / "irisd.env").write_text("ANTHROPIC_API_KEY=test-key\n")  # as the fix says
    assert iris.cli("reload").returncode == 0
    assert iris.cli_json("tell", "alpha", "again")["text"].startswith("echo #")
