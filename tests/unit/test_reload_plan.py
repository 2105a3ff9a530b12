"""What a reload of config.yaml changes: a pure function of the old and new config."""

from __future__ import annotations

from pathlib import Path

from iris_common.config import IrisConfig, parse_config
from irisd.reload import plan_reload


def config(tmp_path: Path, body: str) -> IrisConfig:
    return parse_config(body.replace("DIR", str(tmp_path)).encode(), source="config.yaml")


def test_added_removed_changed_and_unchanged_teams(tmp_path: Path) -> None:
    old = config(tmp_path, "teams:\n  a:\n    path: DIR\n  b:\n    path: DIR\n  c:\n    path: DIR\n")
    new = config(tmp_path, "teams:\n  a:\n    path: DIR\n  b:\n    path: DIR\n    permissions: deny\n"
                           "  d:\n    path: DIR\n")
    plan = plan_reload(old, new)
    assert (plan.added, plan.removed, plan.restart) == (("d",), ("c",), ("b",))  # a keeps its warm claude
    assert plan.summary() == [
        "team d added",
        "team c removed: its pairs finish what they hold, then stop",
        "team b changed: its claude restarts with the new settings once idle",
    ]


def test_settings_apply_now_or_at_restart_and_shared_changes_restart_every_team(tmp_path: Path) -> None:
    old = config(tmp_path, "teams:\n  a:\n    path: DIR\n")
    new = config(tmp_path, "settings:\n  maxProcesses: 3\n  httpPort: 9999\n  responseTimeout: 5000\n"
                           "teams:\n  a:\n    path: DIR\n")
    plan = plan_reload(old, new)
    assert plan.settings == ("response_timeout", "max_processes") and plan.at_restart == ("http_port",)
    assert plan.restart == ("a",)  # the team's own response timeout came from the default
    assert "settings.httpPort changed: takes effect when irisd restarts" in plan.summary()
    env = plan_reload(old, IrisConfig(source=old.source, settings=old.settings, teams=old.teams,
                                      daemon_env={"ANTHROPIC_API_KEY": "new"}))
    assert env.restart == ("a",) and env.settings == ()
    assert env.summary()[0] == "irisd.env changed: every team's claude takes it when it restarts"  # the why
    assert plan_reload(old, old).summary() == ["nothing changed"]


def test_a_changed_a2a_team_is_said_to_use_its_new_settings_not_to_restart_a_claude(tmp_path: Path) -> None:
    old = config(tmp_path, "teams:\n  a:\n    path: DIR\n  agent:\n    a2a: http://127.0.0.1:1/\n")
    new = config(tmp_path, "teams:\n  a:\n    path: DIR\n  agent:\n    a2a: http://127.0.0.1:2/\n")
    plan = plan_reload(old, new)
    assert plan.restart == ("agent",)  # the supervisor still drops what it holds for the agent
    assert plan.summary() == ["team agent changed: its next tell goes to the agent with the new settings"]
