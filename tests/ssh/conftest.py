"""Teams on another host: a real sshd on loopback (a user of its own), the pinned claude
run through it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from harness import claude_binary
from ssh.sshd import SshServer


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
