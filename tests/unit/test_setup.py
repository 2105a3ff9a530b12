from __future__ import annotations

from pathlib import Path

import pytest

from iris_cli.setup import write_starter_config
from irisd.config import load_config
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
        write_starter_config([])
    write_starter_config([], force=True)
    assert load_config(path).teams == {}


def test_init_checks_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="is not NAME=FOLDER"):
        write_starter_config(["api"])
    with pytest.raises(ConfigError, match="does not exist"):
        write_starter_config([f"api={tmp_path}/missing"])
    with pytest.raises(ConfigError, match="--team 'api' is given twice; give each team once"):
        write_starter_config([f"api={tmp_path}", f"api={tmp_path}"])
    assert not (tmp_path / "config.yaml").exists()
