"""The claude children's environment: an allowlist, irisd.env, a team's env: map."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_common.config import parse_config
from iris_common.environment import child_environment, for_children, load_env_file
from protocol.errors import ConfigError

SESSION_VARIABLES = {
    # What a Claude Code session exports to what it starts (iris mcp, then irisd).
    "CLAUDE_CODE_SESSION_ID": "s", "CLAUDE_PROJECT_DIR": "/p", "CLAUDE_CODE_MESSAGING_SOCKET": "/m",
    "CLAUDE_CODE_MESSAGING_TOKEN": "t", "CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli",
    # systemd's, Iris's own, and whatever else a shell had.
    "NOTIFY_SOCKET": "/n", "LISTEN_FDS": "1", "WATCHDOG_USEC": "1", "IRIS_SECRET_X": "x", "IRIS_SOCKET": "/s",
    "IRIS_RUN": "abc:1:2", "OLDPWD": "/", "SSH_AUTH_SOCK": "/agent", "GITHUB_TOKEN": "g", "VIRTUAL_ENV": "/v",
}
NEEDED = {
    "HOME": "/home/me", "PATH": "/bin", "USER": "me", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
    "HTTPS_PROXY": "http://p", "no_proxy": "localhost", "SSL_CERT_FILE": "/c", "NODE_EXTRA_CA_CERTS": "/c",
    "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://m", "CLAUDE_CODE_USE_BEDROCK": "1",
    "AWS_REGION": "eu", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1",
    "XDG_RUNTIME_DIR": "/run/user/1", "TMPDIR": "/tmp",
}


def test_children_get_what_claude_needs_and_nothing_of_who_started_irisd() -> None:
    env = child_environment(
        claude_config_dir=Path("/cfg"), environ={**NEEDED, **SESSION_VARIABLES, "CLAUDE_CONFIG_DIR": "/session/cfg"}
    )
    assert env == {**NEEDED, "MCP_CONNECT_TIMEOUT_MS": "30000", "CLAUDE_CONFIG_DIR": "/cfg"}


def test_claude_waits_30_s_for_iris_s_mcp_server_unless_told_otherwise() -> None:
    """claude 2.1.330 gives an MCP server 5 s to connect, then goes on without its tools."""
    assert child_environment(claude_config_dir=Path("/cfg"), environ={})["MCP_CONNECT_TIMEOUT_MS"] == "30000"
    nine = {"MCP_CONNECT_TIMEOUT_MS": "9"}
    for env in (
        child_environment(claude_config_dir=Path("/cfg"), environ=nine),
        child_environment(claude_config_dir=Path("/cfg"), environ={}, daemon_env=nine),
        child_environment(claude_config_dir=Path("/cfg"), environ={}, team_env=nine),
    ):
        assert env["MCP_CONNECT_TIMEOUT_MS"] == "9"


def test_irisd_env_then_the_teams_env_are_added_later_ones_winning() -> None:
    env = child_environment(
        claude_config_dir=Path("/cfg"),
        daemon_env={"GITHUB_TOKEN": "from-file", "ANTHROPIC_API_KEY": "file-key"},
        team_env={"GITHUB_TOKEN": "team", "NODE_ENV": "test"},
        environ={"PATH": "/bin", "ANTHROPIC_API_KEY": "env-key"},
    )
    assert env == {
        "PATH": "/bin", "ANTHROPIC_API_KEY": "file-key", "GITHUB_TOKEN": "team", "NODE_ENV": "test",
        "MCP_CONNECT_TIMEOUT_MS": "30000", "CLAUDE_CONFIG_DIR": "/cfg",
    }


def test_the_env_file_is_read_like_systemd_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "irisd.env"
    assert load_env_file(path) == {}  # none
    path.write_text(
        "# credentials\n\nANTHROPIC_API_KEY=sk-1=2\nexport GITHUB_TOKEN = 'abc def'\n; a comment\n"
        'QUOTED="x"\nIRIS_SOCKET=/s\nCLAUDE_CONFIG_DIR=/c\n'
    )
    found = load_env_file(path)
    assert found == {
        "ANTHROPIC_API_KEY": "sk-1=2", "GITHUB_TOKEN": "abc def", "QUOTED": "x", "IRIS_SOCKET": "/s",
        "CLAUDE_CONFIG_DIR": "/c",
    }
    assert for_children(found) == {"ANTHROPIC_API_KEY": "sk-1=2", "GITHUB_TOKEN": "abc def", "QUOTED": "x"}

    path.write_text("OK=1\nnot a line\n")
    with pytest.raises(ConfigError, match=r"irisd.env, line 2: expected NAME=VALUE, got 'not a line'"):
        load_env_file(path)
    path.write_text("9LIVES=1\n")
    with pytest.raises(ConfigError, match=r"line 1: '9LIVES' is not a variable name"):
        load_env_file(path)
    path.write_bytes(b"A=\xff\n")
    with pytest.raises(ConfigError, match="it is not UTF-8 text"):
        load_env_file(path)
    for unclosed in ('TOKEN="abc def\n', "TOKEN='\n"):  # was: the quote kept as part of the value
        path.write_text(unclosed)
        with pytest.raises(ConfigError, match=r"line 1: the value of TOKEN opens a quote \(.\) it does not close"):
            load_env_file(path)


def team_config(tmp_path: Path, env: str) -> bytes:
    return f"teams:\n  alpha:\n    path: {tmp_path}\n    env:\n{env}".encode()


def test_a_teams_env_is_validated_with_clear_errors(tmp_path: Path) -> None:
    config = parse_config(team_config(tmp_path, "      NODE_ENV: test\n      EMPTY: ''\n"), source="c.yaml")
    assert config.teams["alpha"].env == {"NODE_ENV": "test", "EMPTY": ""}
    for env, message in (
        ("      PORT: 8080\n", "the value of PORT is not text; quote it"),
        ("      'BAD NAME': x\n", "'BAD NAME' is not a variable name"),
        ("      CLAUDE_CONFIG_DIR: /x\n", "CLAUDE_CONFIG_DIR cannot be set for the children; set it in irisd's own"),
        ("      IRIS_RUN: x\n", "IRIS_RUN cannot be set for the children; it is irisd's own"),
        ("      LISTEN_FDS: '3'\n", "LISTEN_FDS cannot be set"),
    ):
        with pytest.raises(ConfigError, match=r"c\.yaml: team 'alpha', key 'teams\.alpha\.env'") as error:
            parse_config(team_config(tmp_path, env), source="c.yaml")
        assert message in error.value.message
    with pytest.raises(ConfigError, match=r"teams\.alpha\.env"):
        parse_config(team_config(tmp_path, "      - A=1\n"), source="c.yaml")
