from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from browser import open_browser
from harness import Iris, claude_binary
from iris_cli.scripted_model import ScriptedModel
from sshd import SshServer


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return claude_binary()


@pytest.fixture(scope="session")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


@pytest.fixture
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket standing in for systemd's notification socket, at a short
    path (Unix socket paths are limited to about 100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="iris-notify-", dir="/tmp"))
    path = str(folder / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield sock, path
    sock.close()
    os.unlink(path)
    folder.rmdir()


@pytest.fixture
def iris(tmp_path: Path, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """A fresh, isolated Iris (not started: add teams, then ``iris.start()``)."""
    instance = Iris(tmp_path, model_url=model.base_url, claude=claude_bin)
    yield instance
    if instance.process is not None:
        instance.stop(timeout=30)
    shutil.rmtree(instance.socket.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless chromium for every browser test of this process."""
    with open_browser() as instance:
        yield instance


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = SshServer(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.close()


@pytest.fixture
def remote_claude(sshd: SshServer) -> str:
    """The pinned claude, as the remote user can run it (copied into its HOME if the
    checkout is not readable by other users)."""
    binary = claude_binary().resolve()
    probe = sshd.ssh(f"test -x {binary} && echo ok")
    if probe.stdout.strip() == "ok":
        return str(binary)
    copy = sshd.home / "claude"
    if not copy.exists():
        shutil.copy2(binary, copy)
        os.chown(copy, sshd.uid, sshd.uid)
    return str(copy)


@pytest.fixture
def remote_folder(sshd: SshServer) -> Iterator[str]:
    """The team's folder on the "remote" host: inside the remote user's HOME."""
    path = sshd.home / "project"
    path.mkdir(exist_ok=True)
    os.chown(path, sshd.uid, sshd.uid)
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)
