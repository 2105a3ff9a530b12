from __future__ import annotations

from pathlib import Path

import pytest

from iris_cli.setup import write_starter_config
from iris_common.config import load_config
from protocol.errors import ConfigError


def test_init_writes_a_config_irisd_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_HOME", str(tmp_path / "home"))
    (tmp_path / "api").mkdir()
    monkeypatch.chdir(tmp_path)
    path, teams = write_starter_config(["api=api", f"web={tmp_path}"])
    assert teams == ["api", "web"]
    config = load_config(path)
    assert config.team("api").path == str((tmp_path / "api").resolve())
    with pytest.raises(ConfigError, match="exists already"):
        write_starter_config(["api=api"])
    with pytest.raises(ConfigError, match="name at least one team: 'iris init --team NAME=FOLDER'"):
        write_starter_config([], force=True)
    claude = tmp_path / "my-claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    write_starter_config(["api=api"], force=True, claude=str(claude))
    assert load_config(path).settings.claude_path == str(claude)


def test_a_config_without_teams_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    for body in ("", "settings: {}\n", "teams: {}\n"):
        (tmp_path / "config.yaml").write_text(body)
        with pytest.raises(ConfigError, match=r"no teams are configured.*iris init --force --team"):
            load_config(tmp_path / "config.yaml")


def test_init_checks_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="is not NAME=FOLDER"):
        write_starter_config(["api"])
    with pytest.raises(ConfigError, match="does not exist"):
        write_starter_config([f"api={tmp_path}/missing"])
    with pytest.raises(ConfigError, match="--team 'api' is given twice; give each team once"):
        write_starter_config([f"api={tmp_path}", f"api={tmp_path}"])
    with pytest.raises(ConfigError) as refused:
        write_starter_config([f"bad name={tmp_path}"])
    # It names what to fix (--team), not a config.yaml as if one had been written.
    assert refused.value.message.startswith("--team 'bad name=")
    assert "a team name must start with an ASCII letter" in refused.value.message
    assert str(tmp_path / "config.yaml") not in refused.value.message
    assert not (tmp_path / "config.yaml").exists()


def test_init_can_choose_the_http_port_for_a_machine_where_1615_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRIS_HOME", str(tmp_path / "home"))
    path, _ = write_starter_config([f"api={tmp_path}"])
    assert load_config(path).settings.http_port == 1615  # the default, unless asked
    for port in (0, 8615):
        write_starter_config([f"api={tmp_path}"], force=True, http_port=port)
        assert load_config(path).settings.http_port == port
