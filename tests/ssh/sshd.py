"""A real OpenSSH server for tests of remote teams: ``sshd`` on a free loopback port with
throwaway host and client keys, letting in one throwaway user that has its own HOME, so
what a "remote" claude writes (its ~/.claude, its sessions) is provably not irisd's.

Needs root (to create the user and run sshd) and Debian's ``openssh-server`` and
``openssh-client`` (``scripts/install`` installs them when run as root). Everything is
undone by ``close()``: sshd and the user's processes are stopped (by pid), the user and
its HOME are removed. A user left behind by a killed run is removed on the next start.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from harness import free_port

SSHD = "/usr/sbin/sshd"
USER_PREFIX = "irisr"  # irisr<pid>: one user per test process, so xdist workers never share one
HOME_PREFIX = "iris-remote-home-"


def _run(*argv: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")


def processes_of(uid: int) -> list[int]:
    """Live processes owned by ``uid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) == uid:
                found.append(int(entry.name))
                break
    return found


def command_lines(pids: list[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            lines.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return lines


class SshServer:
    """sshd on 127.0.0.1:<free port>, one user ``irisr<pid>`` with its own HOME."""

    def __init__(self, root: Path) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("the ssh tests need root (to add a user and run sshd); run them as CI does")
        if not os.access(SSHD, os.X_OK) or shutil.which("ssh") is None:
            raise RuntimeError("sshd or ssh is missing; run scripts/install as root (it installs openssh)")
        self.root = root
        self.user = f"{USER_PREFIX}{os.getpid()}"
        self.home = Path(tempfile.gettempdir()) / f"{HOME_PREFIX}{os.getpid()}"
        self.port = 0
        self.client_key = root / "client_key"
        self.no_forwarding_key = root / "client_key_no_forwarding"  # its logins may forward no port
        self.known_hosts = root / "known_hosts"
        self.log_path = root / "sshd.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.uid = -1

    # --- what a team's config needs ----------------------------------------------------

    @property
    def destination(self) -> str:
        return f"{self.user}@127.0.0.1"

    def ssh_options(self, *, forwarding: bool = True) -> list[str]:
        """The team's ``sshOptions``: this server's port, key and host key, nothing else
        (``forwarding=False``: a key whose logins sshd allows no port forwarding)."""
        return [
            "-F", "/dev/null",
            "-p", str(self.port),
            "-i", str(self.client_key if forwarding else self.no_forwarding_key),
            "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "LogLevel=ERROR",
        ]

    def ssh(self, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on the "remote" side, as the test user."""
        return subprocess.run(
            ["ssh", "-T", "-o", "BatchMode=yes", *self.ssh_options(), self.destination, command],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )

    def remote_processes(self) -> list[int]:
        return processes_of(self.uid)

    # --- life -----------------------------------------------------------------------------

    def start(self) -> SshServer:
        self._remove_user()  # one left behind by a run that was killed
        self._add_user()
        host_key = self.root / "host_key"
        for key in (host_key, self.client_key, self.no_forwarding_key):
            key.unlink(missing_ok=True)
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "iris-test", "-f", str(key))
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        authorized = ssh_dir / "authorized_keys"
        authorized.write_bytes(
            self.client_key.with_suffix(".pub").read_bytes()
            + b"no-port-forwarding " + self.no_forwarding_key.with_suffix(".pub").read_bytes()
        )
        for path in (ssh_dir, authorized):
            os.chown(path, self.uid, self.uid)
        authorized.chmod(0o600)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        for attempt in range(5):
            self.port = free_port()
            config = self._write_config(host_key)
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    [SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
                )
            if self._wait_listening():
                break
            self._stop_sshd()
            if attempt == 4:
                raise RuntimeError(f"sshd did not start:\n{self.log()}")
        public = host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n")
        probe = self.ssh("echo ready")
        if probe.stdout.strip() != "ready":
            raise RuntimeError(f"cannot log in over ssh: {probe.stderr}\n{self.log()}")
        return self

    def close(self) -> None:
        self._stop_sshd()
        self._remove_user()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # --- internals ------------------------------------------------------------------------

    def _add_user(self) -> None:
        _run("useradd", "--create-home", "--home-dir", str(self.home), "--shell", "/bin/sh",
             "--user-group", self.user)
        # An account without a password is "locked" and sshd (without PAM) refuses it;
        # '*' means no password can ever work, but the account is open to keys.
        _run("usermod", "-p", "*", self.user)
        self.uid = pwd.getpwnam(self.user).pw_uid

    def _remove_user(self) -> None:
        try:
            uid = pwd.getpwnam(self.user).pw_uid
        except KeyError:
            shutil.rmtree(self.home, ignore_errors=True)
            return
        for _ in range(50):  # userdel refuses a user with live processes
            pids = processes_of(uid)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        subprocess.run(["userdel", "--remove", self.user], capture_output=True, timeout=60)
        shutil.rmtree(self.home, ignore_errors=True)

    def _write_config(self, host_key: Path) -> Path:
        config = self.root / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {host_key}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AllowUsers {self.user}",
                    "AuthorizedKeysFile .ssh/authorized_keys",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin no",
                    "UsePAM no",
                    "StrictModes no",
                    "AllowTcpForwarding yes",
                    "X11Forwarding no",
                    "PrintMotd no",
                    "MaxStartups 100",
                    "MaxSessions 100",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        return config

    def _wait_listening(self, timeout: float = 20.0) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def _stop_sshd(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
