from __future__ import annotations

import re
from pathlib import Path

import pytest

from iris_common.config import IrisConfig, a2a_prompt, load_config, parse_config
from protocol.errors import ConfigError, UnknownTeamError


def parse(text: str) -> IrisConfig:
    return parse_config(text.encode(), source="/etc/iris/config.yaml")


def test_a_seed_style_config_loads(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    config = parse(f"""
settings:
  responseTimeout: 90000
  idleTimeout: 600000
  maxProcesses: 4
  healthCheckInterval: 30000
  sessionInitTimeout: 30000
teams:
  frontend:
    project: {tmp_path}/web
    description: The web app
    skipPermissions: true
    color: "#FF6B9D"
    idleTimeout: 5000
  backend:
    path: {tmp_path}
""")
    assert config.settings.response_timeout == 90000
    frontend = config.team("frontend")
    assert frontend.path == str((tmp_path / "web").resolve())
    assert frontend.idle_timeout_ms == 5000 and frontend.skip_permissions
    assert config.team("backend").idle_timeout_ms == 600000
    with pytest.raises(UnknownTeamError, match="known teams: backend, frontend"):
        config.team("mobile")


def test_empty_file_is_an_empty_config() -> None:
    assert parse("").teams == {}
    assert parse("teams:\n").teams == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("settings:\n  responseTimout: 1\n", "unknown key 'settings.responseTimout'"),
        ("teams:\n  a:\n    path: /tmp\n    colour: red\n", "unknown key 'teams.a.colour'"),
        ("settings:\n  maxProcesses: many\n", "key 'settings.maxProcesses': expected `int`, got `str`"),
        ("teams:\n  a:\n    path: 3\n", "key 'teams.a.path': expected `str`"),
        ("teams:\n  a:\n    path: relative/dir\n", "is relative; write the absolute path"),
        ("teams:\n  a:\n    description: x\n", "key 'teams.a.path' is missing"),
        ("teams:\n  'a b':\n    path: /tmp\n", "team name must start with an ASCII letter or digit"),
        ("teams:\n  'müller':\n    path: /tmp\n", "hold only ASCII letters (a-z, A-Z), digits (0-9)"),
        (
            "settings:\n  permissions: maybe\n",
            "key 'settings.permissions': invalid enum value 'maybe'; use one of: ask | deny | skip",
        ),
        (
            "teams:\n  a:\n    path: /tmp\n    permissions: maybe\n",
            "key 'teams.a.permissions': invalid enum value 'maybe'; use one of: ask | deny | skip",
        ),
        ("teams:\n  ../x:\n    path: /tmp\n", "team name must start"),
        ("teams:\n  a:\n    path: /tmp\n    project: /var\n", "'path' and 'project' differ"),
        ("teams:\n  a:\n    path: /tmp\n    color: pink\n", "is not a hex color"),
        ("teams:\n  a:\n    path: /tmp\n    idleTimeout: 5\n", "must be at least 1000"),
        ("settings:\n  maxProcesses: 0\n", "'settings.maxProcesses' is 0; it must be at least 1"),
        # The numeric settings' limits are on their types (one check, the decoder's), with their fix.
        ("settings:\n  httpPort: 70000\n", "'settings.httpPort' is 70000; it must be at most 65535; use a port from 1"),
        ("settings:\n  rateLimit: 0\n", "'settings.rateLimit' is 0; it must be at least 1; use at least 1 tell"),
        # a number past every sensible value (and past 64 bits: 'iris status' failed on it)
        ("settings:\n  maxProcesses: 99999999999999999999999\n",
         "'settings.maxProcesses' is 99999999999999999999999; it must be at most 1000000000000"),
        ("teams:\n  a:\n    path: /tmp\n    idleTimeout: 10000000000000\n", "it must be at most 1000000000000"),
        ("settings:\n  budget:\n    chainUsd: -1\n", "'settings.budget.chainUsd' is -1; it must be at least 0"),
        ("settings:\n  retentionDays: 0\n", "'settings.retentionDays' is 0; it must be more than 0"),
        ("settings:\n  questions:\n    ttl: 5\n", "'settings.questions.ttl' is 5; it must be at least 1000"),
        (
            "settings:\n  agent:\n    allow: [team_wake, team_approve]\n",
            "key 'settings.agent.allow[1]': invalid enum value 'team_approve'; iris-agent may be allowed only: "
            "team_tell, team_wake, team_sleep, team_cancel",
        ),
        ("settings:\n  agent:\n    dailyUsd: -1\n", "'settings.agent.dailyUsd' is -1; it must be at least 0"),
        ("settings:\n  questions:\n    answerWithin: 5\n", "'settings.questions.answerWithin' is 5; it must be"),
        ("teams:\n  a:\n    path: /tmp\n    budget:\n      dailyUsd: -2\n", "'teams.a.budget.dailyUsd' is -2;"),
        ("- just\n- a list\n", "must be a mapping"),
        ("teams: [\n", "not valid YAML"),
        # where, in the file's own terms (was: 'in "<byte string>", line 3, column 1' over 5 lines)
        ("settings:\n  maxProcesses: 2\n\tidleTimeout: 5000\n",
         "config.yaml, line 3, column 1: not valid YAML: found character '\\t' that cannot start any token "
         "(indent with spaces, not tabs)"),
        ("teams:\n  a:\n    path: /tmp\n  a:\n    path: /var\n", "key 'a' is given twice (lines 2 and 4)"),
        ("settings:\n  maxProcesses: 2\n  maxProcesses: 3\n", "key 'maxProcesses' is given twice"),
        ("teams:\n  a:\n    path: /tmp\n    a2aPrompt: 'hi {sender}'\n", "'teams.a.a2aPrompt': it must hold {text}"),
        (
            "teams:\n  a:\n    path: /tmp\n    a2aPrompt: '{text} {taskId}'\n",
            "{taskId} is no field; it may hold {text}, {messageId}, {sender}",
        ),
    ],
)
def test_every_mistake_names_the_file_the_key_and_the_fix(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    assert caught.value.message.startswith("/etc/iris/config.yaml")
    assert expected in caught.value.message
    assert "<byte string>" not in caught.value.message


def test_missing_file_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist; create it"):
        load_config(tmp_path / "config.yaml")


def test_home_folder_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "proj").mkdir()
    config = parse("teams:\n  a:\n    path: ~/proj\n")
    assert config.team("a").path == str((tmp_path / "proj").resolve())


@pytest.mark.parametrize(("global_mode", "expected"), [("deny", "deny"), ("ask", "ask"), ("skip", "ask")])
def test_skip_permissions_false_keeps_the_global_mode_unless_that_is_skip(global_mode: str, expected: str) -> None:
    config = parse(
        f"settings:\n  permissions: {global_mode}\nteams:\n  a:\n    path: /tmp\n    skipPermissions: false\n"
    )
    assert config.team("a").permissions == expected


def test_a_remote_team_takes_a_host_ssh_options_a_claude_path_and_an_env(tmp_path: Path) -> None:
    config = parse_config(
        b"teams:\n  gpu:\n    host: me@gpu-box\n    path: /srv/model\n    sshOptions: ['-p', '2222']\n"
        b"    claudePath: /opt/claude\n    env:\n      ANTHROPIC_API_KEY: k\n",
        source="c.yaml",
    )
    team = config.team("gpu")
    assert (team.host, team.path, team.ssh_options, team.claude_path) == ("me@gpu-box", "/srv/model", ("-p", "2222"),
                                                                           "/opt/claude")
    assert team.env == {"ANTHROPIC_API_KEY": "k"}  # the folder is on the other host: not checked here


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        (b"teams:\n  gpu:\n    host: gpu-box\n    path: srv/model\n", "is relative; write the absolute path of the "
                                                                      "project folder on gpu-box"),
        (b"teams:\n  gpu:\n    host: -oProxyCommand=x\n    path: /srv\n", "is not an ssh destination"),
        (b"teams:\n  gpu:\n    path: /tmp\n    sshOptions: ['-p', '1']\n", "'sshOptions' is only for a team with a"),
        (b"teams:\n  gpu:\n    host: box\n    path: /srv\n    env:\n      'A B': x\n", "is not a variable name"),
        (b"teams:\n  gpu:\n    host: box\n    path: /srv\n    env:\n      A: \"x\\ny\"\n", "holds a line break"),
    ],
)
def test_remote_team_mistakes_are_named(yaml_text: bytes, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        parse_config(yaml_text, source="c.yaml")


def test_a_missing_team_folder_makes_that_team_unavailable_not_the_config_invalid(tmp_path: Path) -> None:
    from iris_common.config import team_unavailable

    text = f"teams:\n  a:\n    path: {tmp_path}/later\n  b:\n    path: /etc/hostname\n  c:\n    path: {tmp_path}\n"
    config = parse_config(text.encode(), source="config.yaml")
    assert team_unavailable(config.team("a")) == (
        f"team 'a' is unavailable: its folder {tmp_path}/later does not exist; create it, "
        "or fix teams.a.path in config.yaml"
    )
    assert "is not a folder" in team_unavailable(config.team("b"))
    assert team_unavailable(config.team("c")) == ""
    (tmp_path / "later").mkdir()
    assert team_unavailable(config.team("a")) == ""  # checked when asked: no restart needed


def test_an_a2a_prompt_frames_the_message_once_and_no_prompt_passes_it_as_sent() -> None:
    team = parse("teams:\n  a:\n    path: /tmp\n    a2aPrompt: '[A2A {messageId} from {sender}] {text}'\n").teams["a"]
    framed = a2a_prompt(team.a2a_prompt, "say {sender}", message_id="m-1", sender="a2a:bot")
    assert framed == "[A2A m-1 from a2a:bot] say {sender}"
    plain = parse("teams:\n  a:\n    path: /tmp\n").teams["a"]
    assert a2a_prompt(plain.a2a_prompt, "hi", message_id="m", sender="s") == "hi"


def test_health_and_notify_settings_load_with_defaults_off() -> None:
    config = parse_config(b"settings:\n  health:\n    stuckAfter: 60000\n    recover: true\n", source="c.yaml")
    assert config.settings.health.stuck_after == 60000 and config.settings.health.recover
    assert config.settings.health.cancel_after == 30 * 60_000
    plain = parse_config(b"{}", source="c.yaml").settings
    assert not plain.health.recover and plain.notify.webhook == ""


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        (b"settings:\n  health:\n    stuckAfter: 10\n",
         "key 'settings.health.stuckAfter' is 10; it must be at least 1000"),
        (b"settings:\n  health:\n    stuckAfter: 600000\n    cancelAfter: 60000\n",
         "'settings.health.cancelAfter' (60000) is shorter than 'settings.health.stuckAfter' (600000)"),
        (b"settings:\n  health:\n    budgetShare: 1.5\n",
         "key 'settings.health.budgetShare' is 1.5; it must be at most 1; use a share"),
        (b"settings:\n  health:\n    memoryFactor: 0.5\n",
         "key 'settings.health.memoryFactor' is 0.5; it must be at least 1"),
        (b"settings:\n  health:\n    stuckAfer: 1\n", "unknown key 'settings.health.stuckAfer'"),
        (b"settings:\n  notify:\n    webhook: ntfy.sh/x\n",
         "key 'settings.notify.webhook' is 'ntfy.sh/x'; use an http"),
    ],
)
def test_health_and_notify_mistakes_are_named(yaml_text: bytes, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        parse_config(yaml_text, source="c.yaml")
