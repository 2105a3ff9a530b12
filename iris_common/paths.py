"""Where Iris keeps its files. Read from the environment once, at start-up.

* ``IRIS_HOME`` (default ``~/.iris``): ``config.yaml``, ``data/iris.db``, ``logs/``.
* The socket: ``IRIS_SOCKET`` if set, else ``$XDG_RUNTIME_DIR/iris/irisd.sock``,
  else ``$IRIS_HOME/run/irisd.sock`` (``iris_common.locations``). Its folder is 0700,
  the socket 0600.
* ``CLAUDE_CONFIG_DIR`` (default ``~/.claude``): where claude keeps session files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from iris_common.locations import iris_home, socket_path


class IrisPaths(msgspec.Struct, frozen=True):
    home: Path
    socket: Path
    claude_config_dir: Path

    @property
    def config_file(self) -> Path:
        return self.home / "config.yaml"

    @property
    def database(self) -> Path:
        return self.home / "data" / "iris.db"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IrisPaths:
        env = os.environ if env is None else env
        claude_dir = Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
        return cls(home=Path(iris_home(env)), socket=Path(socket_path(env)), claude_config_dir=claude_dir)


def escape_project_path(path: str) -> str:
    """claude's folder name for a project: every char but ASCII letters and digits -> '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def session_file(claude_config_dir: Path, project_path: str, session_id: str) -> Path:
    """The transcript claude keeps for ``session_id`` started in ``project_path``."""
    return claude_config_dir / "projects" / escape_project_path(project_path) / f"{session_id}.jsonl"


def transcript_path(paths: IrisPaths, teams: Mapping[str, Any], to_team: str, session_id: str) -> Path | None:
    """The transcript of a pair's session, or None if its team is no longer configured or
    runs on another host (its transcript is there, not here)."""
    team = teams.get(to_team)
    if team is None or team.host:
        return None
    return session_file(paths.claude_config_dir, team.path, session_id)


def existing(files: list[Path | None]) -> list[bool]:
    """Which of ``files`` exist: one blocking call for a whole listing (run it in a thread)."""
    return [file is not None and file.exists() for file in files]


MAX_SOCKET_PATH_BYTES = 107  # a Unix socket's path (sun_path) with its closing NUL: 108 bytes


def socket_path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why no Unix socket can be at ``path`` (too long), with the fix; None when one can."""
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        return f"socket path {os.fspath(path)} is too long for a Unix socket; set a shorter IRIS_SOCKET"
    return None


def socket_dir_problem(folder: Path) -> str | None:
    """Why irisd must not put its socket in ``folder`` (another user's, or writable by
    others), with the fix; None when it is safe or does not exist yet (irisd creates it 0700)."""
    import stat

    try:
        info = folder.stat()
    except FileNotFoundError:
        return None
    if info.st_uid != os.getuid():
        return (
            f"socket folder {folder} belongs to uid {info.st_uid}, not you; "
            "set IRIS_SOCKET to a path in a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        # Never suggest a chmod: the folder may be /tmp or another one the machine shares.
        return (
            f"socket folder {folder} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}), "
            "who could replace the socket; set IRIS_SOCKET to a path in a folder only you can write "
            "(or unset it: irisd then uses $XDG_RUNTIME_DIR/iris/ or $IRIS_HOME/run/, made 0700)"
        )
    return None
