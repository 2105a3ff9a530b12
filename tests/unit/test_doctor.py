"""``iris doctor``'s checks, each on a set-up broken in one way: one line, with the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iris_cli.doctor import CHECKS, Check, Context, check_config, check_credentials, run_checks
from iris_common import locate


def setup(tmp_path: Path, config: str | None, **env: str) -> Context:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "team").mkdir(exist_ok=True)
    if config is not None:
        (home / "config.yaml").write_text(config.replace("TEAM", str(tmp_path / "team")))
    return Context(env={
        "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "IRIS_HOME": str(home),
        "IRIS_SOCKET": str(tmp_path / "run" / "irisd.sock"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        **env,
    })


def by_name(ctx: Context) -> dict[str, Check]:
    return {c.name: c for c in run_checks(ctx)}


def test_a_sound_setup_fails_nothing(tmp_path: Path) -> None:
    claude = tmp_path / "claude-bin"
    claude.write_text(f"#!/bin/sh\necho '{locate.CLAUDE_VERSION} (Claude Code)'\n")
    claude.chmod(0o755)
    config = f"settings:\n  claudePath: {claude}\nteams:\n  a:\n    path: TEAM\n"
    ctx = setup(tmp_path, config, ANTHROPIC_API_KEY="k")
    checks = by_name(ctx)
    assert [c.name for c in run_checks(ctx)] == [
        "claude", "credentials", "config", "team folders", "remote teams", "A2A teams", "mesh", "root + skip",
        "socket folder", "irisd", "health", "HTTP face", "systemd unit", "Claude Code",
    ]
    assert len(CHECKS) == 14
    tested = f"claude {locate.CLAUDE_VERSION} at {claude} (the version Iris is tested with)"
    assert checks["claude"] == Check("claude", "ok", tested)
    assert all(c.verdict != "fail" for c in checks.values()), checks
    assert checks["irisd"].verdict == "warn" and "iris daemon start" in checks["irisd"].fix
    assert checks["HTTP face"] == Check("HTTP face", "skip", "needs a running irisd")
    assert checks["health"] == Check("health", "skip", "irisd is not running: nothing to watch")


def test_health_says_the_running_irisds_findings_worst_first_with_their_fixes(tmp_path: Path) -> None:
    from iris_cli.doctor import check_health
    from protocol.health import Finding
    from protocol.messages import StatusReply

    ctx = setup(tmp_path, None)
    status = StatusReply(pid=1, daemon_version="x", started_at=0, socket_path="s", config_path="c", teams=[],
                         processes=[], max_processes=1)
    ctx.__dict__["status"] = status  # as if irisd answered
    assert check_health(ctx) == Check("health", "ok", "irisd's health monitor finds nothing wrong")
    ctx.__dict__["status"] = StatusReply(**{**{f: getattr(status, f) for f in status.__struct_fields__}, "findings": [
        Finding(kind="crash_loop", severity="error", subject="external->a", summary="pair external->a: claude keeps "
                "failing to start", fix="iris doctor; then iris wake a"),
        Finding(kind="stuck_tell", severity="warning", subject="t1", summary="tell t1 is silent", fix="iris cancel t1"),
    ]})
    check = check_health(ctx)
    assert check.verdict == "fail"
    assert check.detail == "error: pair external->a: claude keeps failing to start; warning: tell t1 is silent"
    assert check.fix == "iris doctor; then iris wake a; iris cancel t1"


def test_an_a2a_teams_header_variable_set_nowhere_is_named_before_a_tell_fails(tmp_path: Path) -> None:
    config = "teams:\n  agent:\n    a2a: http://127.0.0.1:1/\n    headers: {Authorization: 'Bearer ${AGENT_TOKEN}'}\n"
    ctx = setup(tmp_path, config)
    check = by_name(ctx)["A2A teams"]
    assert check.verdict == "fail" and "uses ${AGENT_TOKEN}, which is not set" in check.detail, check
    assert "irisd.env" in check.fix and "iris reload" in check.fix
    (tmp_path / "home" / "irisd.env").write_text("AGENT_TOKEN=s3cret\n")
    assert by_name(setup(tmp_path, config))["A2A teams"] == Check("A2A teams", "ok", "agent (http://127.0.0.1:1/)")
    assert by_name(setup(tmp_path, config.replace("AGENT_TOKEN", "HOME")))["A2A teams"].verdict == "ok"


def test_each_problem_is_named_with_its_fix(tmp_path: Path) -> None:
    ctx = setup(tmp_path, "settings:\n  claudePath: /no/such/claude\nteams: {}\n")
    (tmp_path / "run").mkdir(mode=0o777)
    (tmp_path / "run").chmod(0o777)
    checks = by_name(ctx)
    assert checks["claude"].verdict != "fail"  # a broken config does not hide the claude found
    assert checks["config"].verdict == "fail" and "iris init --force --team" in checks["config"].detail
    assert checks["team folders"].verdict == "skip"
    assert checks["credentials"].verdict == "fail" and "log in" in checks["credentials"].fix
    assert checks["socket folder"] == Check(
        "socket folder", "fail",
        f"socket folder {tmp_path / 'run'} is writable by other users (mode 777), who could replace the socket",
        "set IRIS_SOCKET to a path in a folder only you can write (or unset it: irisd then uses "
        "$XDG_RUNTIME_DIR/iris/ or $IRIS_HOME/run/, made 0700)",
    )


def test_a_missing_claude_and_root_with_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = "settings:\n  claudePath: /no/such/claude\nteams:\n  a:\n    path: TEAM\n    permissions: skip\n"
    ctx = setup(tmp_path, config)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    checks = by_name(ctx)
    assert checks["claude"].verdict == "fail"
    assert "'/no/such/claude' is not an executable" in checks["claude"].detail
    assert checks["root + skip"].verdict == "fail" and "IS_SANDBOX=1" in checks["root + skip"].fix
    sandboxed = setup(tmp_path, None, IS_SANDBOX="1")
    assert by_name(sandboxed)["root + skip"].verdict == "ok"


def test_credentials_from_the_service_env_file_or_a_login(tmp_path: Path) -> None:
    ctx = setup(tmp_path, None)
    (tmp_path / "home" / "irisd.env").write_text("ANTHROPIC_API_KEY=sk-x\n")
    assert check_credentials(ctx).verdict == "ok"
    (tmp_path / "home" / "irisd.env").unlink()
    (tmp_path / "claude").mkdir()
    (tmp_path / "claude" / ".credentials.json").write_text("{}")
    assert check_credentials(ctx).detail.startswith("claude is logged in")
    missing = check_config(ctx)
    assert missing.verdict == "fail" and "does not exist; create it with 'iris init --team" in missing.detail


def test_a_check_that_breaks_is_a_failed_line_not_a_traceback(tmp_path: Path) -> None:
    def check_broken(ctx: Context) -> Check:
        raise RuntimeError("boom")

    [result] = run_checks(setup(tmp_path, None), [check_broken])
    assert result == Check("broken", "fail", "the check itself failed: boom")


@pytest.mark.parametrize(
    ("printed", "verdict", "words"),
    [
        ("2.1.223 (Claude Code)", "fail", "older than 2.1.224, the oldest Iris runs"),
        ("2.1.224 (Claude Code)", "warn", "not " + locate.CLAUDE_VERSION),
        ("9.9.999 (Claude Code)", "warn", "newer than " + locate.CLAUDE_VERSION),
    ],
)
def test_doctor_names_the_claude_version_against_the_tested_one(
    tmp_path: Path, printed: str, verdict: str, words: str
) -> None:
    claude = tmp_path / "claude-bin"
    claude.write_text(f"#!/bin/sh\necho '{printed}'\n")
    claude.chmod(0o755)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.yaml").write_text(
        f"settings:\n  claudePath: {claude}\nteams:\n  a:\n    path: {tmp_path}\n"
    )
    found = dict((c.name, c) for c in run_checks(Context(env={"IRIS_HOME": str(tmp_path / "home")})))["claude"]
    assert found.verdict == verdict and (words in found.detail or words in found.fix), found
    if verdict == "fail":
        assert "crossSessionInbound" in found.fix
    if "newer" in words:
        assert "IRIS_CLAUDE_VERSION=9.9.999 scripts/test" in found.fix
