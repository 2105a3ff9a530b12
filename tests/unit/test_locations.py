"""Where the home and the socket are: ``iris_common.locations`` (strings, for the CLI's client,
which must not import pathlib) and ``IrisPaths.from_env`` built on it say the same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iris_cli.client import Client, default_socket_path
from iris_common.paths import IrisPaths

ENVS: list[dict[str, str]] = [
    {"HOME": "/home/u"},
    {"HOME": "/home/u", "IRIS_HOME": "~/elsewhere"},
    {"HOME": "/home/u", "IRIS_HOME": "rel/home"},
    {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"},
    {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000", "IRIS_SOCKET": "~/s/irisd.sock"},
    {"HOME": "/home/u", "IRIS_SOCKET": "run//x/../irisd.sock"},
]


@pytest.mark.parametrize("env", ENVS)
def test_the_client_finds_the_socket_irisd_listens_on(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("IRIS_HOME", "IRIS_SOCKET", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    paths = IrisPaths.from_env()
    assert Path(os.fspath(Client().socket_path)) == paths.socket == default_socket_path()


def test_the_home_and_socket_are_absolute_with_the_user_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/tmp")
    cwd = Path.cwd()
    assert IrisPaths.from_env({}) == IrisPaths(
        home=Path.home() / ".iris", socket=Path.home() / ".iris" / "run" / "irisd.sock",
        claude_config_dir=Path.home() / ".claude",
    )
    relative = IrisPaths.from_env({"IRIS_HOME": "rel/home", "IRIS_SOCKET": "~/s.sock", "CLAUDE_CONFIG_DIR": "/c"})
    assert relative.home == cwd / "rel" / "home" and relative.socket == Path.home() / "s.sock"
    xdg = IrisPaths.from_env({"IRIS_HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/7"})
    assert xdg.socket == Path("/run/user/7/iris/irisd.sock") and xdg.home == Path("/h")
