"""Which claude Iris runs: what the user named, then the one next to the installation
(scripts/install links it into .venv/bin), then PATH, then the checkout's .cache copy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iris_common import locate


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_order_of_the_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv_bin, on_path = tmp_path / "venv" / "bin", tmp_path / "path"
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setattr(locate, "CACHED", tmp_path / "cache" / "claude")
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.delenv("IRIS_CLAUDE_BIN", raising=False)
    assert locate.find_claude() is None
    cached = executable(tmp_path / "cache" / "claude")
    assert locate.find_claude() == str(cached)
    path_claude = executable(on_path / "claude")
    assert locate.find_claude() == str(path_claude)
    pinned = executable(venv_bin / "claude")
    assert locate.find_claude() == locate.find_claude("claude") == str(pinned)  # the default name searches
    named = executable(tmp_path / "mine" / "claude")
    monkeypatch.setenv("IRIS_CLAUDE_BIN", str(named))
    assert locate.find_claude() == str(named)
    other = executable(tmp_path / "other" / "claude")
    assert locate.find_claude(str(other)) == str(other)  # settings.claudePath / --claude first
    assert locate.find_claude(str(tmp_path / "missing")) is None  # named but absent: not replaced


def test_the_fix_points_at_scripts_install_in_a_checkout() -> None:
    assert f"scripts/install (it installs the pinned claude {locate.CLAUDE_VERSION})" in locate.not_found_fix()
    assert "npm install -g" not in locate.not_found_fix()
