"""Finding, starting and stopping irisd from a client (the CLI, the MCP shim).

Light on purpose: the MCP shim imports :func:`ensure_daemon` for every Claude Code
session, so this module needs only the standard library, the blocking client and
``protocol/`` (no trio, Typer or rich).

irisd runs in the background in one of two ways:

* as a systemd user service (``iris daemon install`` where ``systemctl --user``
  works): systemd listens on the socket, starts irisd on the first connection,
  restarts it when it fails and keeps its logs in the journal;
* as a detached process everywhere else: started in a session of its own so it
  outlives the caller, its pid in ``$IRIS_HOME/run/irisd.pid`` (written by irisd once
  it answers) and its logs in ``$IRIS_HOME/logs/irisd.log``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from iris_cli.client import Client
from iris_cli.systemd_unit import (
    REFERENCE_LISTEN,
    SERVICE_UNIT,
    SOCKET_UNIT,
    render_service_unit,
    render_socket_unit,
    systemd_path,
    systemd_quote,
)
from iris_common.paths import IrisPaths
from protocol.errors import DaemonNotRunningError, IrisError
from protocol.messages import Welcome

# Variables a detached irisd must not inherit from whoever started it: systemd's
# handshake belongs to the caller, and so do the marks of the Claude Code session the
# MCP shim runs in (irisd outlives that session; its children are not part of it).
_NOT_INHERITED_PREFIXES = ("LISTEN_", "WATCHDOG_")
_NOT_INHERITED = frozenset({"NOTIFY_SOCKET", "INVOCATION_ID", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"})
POLL_S = 0.05
MAX_LOG_BYTES = 20 * 1024 * 1024  # then the log is rotated, once, when irisd starts
STOP_TIMEOUT_S = 30.0


class DaemonControlError(IrisError):
    """Installing, starting or stopping irisd failed."""

    code = "daemon_control"


@dataclass(frozen=True)
class Layout:
    """Where a client finds irisd's files and units."""

    paths: IrisPaths
    unit_dir: Path
    runtime_dir: Path | None  # $XDG_RUNTIME_DIR: what systemd's %t means

    @property
    def pid_file(self) -> Path:
        return self.paths.home / "run" / "irisd.pid"

    @property
    def log_file(self) -> Path:
        return self.paths.log_dir / "irisd.log"

    @property
    def start_lock(self) -> Path:
        return self.paths.home / "run" / "start.lock"

    @property
    def service_file(self) -> Path:
        return self.unit_dir / SERVICE_UNIT

    @property
    def socket_file(self) -> Path:
        return self.unit_dir / SOCKET_UNIT

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Layout:
        env = os.environ if env is None else env
        config_home = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        runtime = env.get("XDG_RUNTIME_DIR")
        return cls(
            paths=IrisPaths.from_env(env),
            unit_dir=config_home / "systemd" / "user",
            runtime_dir=Path(runtime) if runtime else None,
        )


# --- is it there? --------------------------------------------------------------------


def daemon_welcome(socket_path: Path, timeout: float = 2.0) -> Welcome | None:
    """irisd's hello answer on ``socket_path``, or None when nothing answers there.

    Raises IrisError when something answers but refuses us (another user's daemon,
    another protocol version): starting a second daemon would not help.
    """
    try:
        with Client(socket_path, timeout=timeout) as client:
            return client.connect()
    except DaemonNotRunningError:
        return None
    except OSError:  # a timeout: a socket file whose daemon is wedged or gone
        return None


# --- systemd ---------------------------------------------------------------------------


def systemctl_user(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run ``systemctl --user ARGS``; raises DaemonControlError if systemctl is missing."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        raise DaemonControlError("systemctl is not installed here")
    return subprocess.run(
        [systemctl, "--user", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def user_manager_problem() -> str | None:
    """Why there is no usable systemd user manager, or None when ``systemctl --user`` works."""
    try:
        probe = systemctl_user("show-environment", timeout=10)
    except DaemonControlError as exc:
        return exc.message
    except subprocess.TimeoutExpired:
        return "'systemctl --user' did not answer within 10 s"
    if probe.returncode != 0:
        detail = probe.stderr.strip().splitlines()[-1:] or [f"exit code {probe.returncode}"]
        return f"'systemctl --user' failed: {detail[0]}"
    return None


def unit_socket_path(layout: Layout) -> Path | None:
    """The path the installed socket unit listens on (``%t`` and ``%h`` expanded)."""
    try:
        text = layout.socket_file.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ListenStream" and value.strip():
            return _expand_specifiers(value.strip(), layout)
    return None


def _expand_specifiers(value: str, layout: Layout) -> Path | None:
    if "%t" in value and layout.runtime_dir is None:
        return None
    expanded = value.replace("%t", str(layout.runtime_dir)).replace("%h", str(Path.home()))
    return Path(expanded.replace("%%", "%"))


def systemd_serves(layout: Layout, socket_path: Path) -> bool:
    """Is irisd installed as a user service listening on ``socket_path``, with a live
    user manager to start it?"""
    if not layout.service_file.exists() or unit_socket_path(layout) != socket_path:
        return False
    return user_manager_problem() is None


def start_with_systemd() -> None:
    result = systemctl_user("start", SOCKET_UNIT, SERVICE_UNIT)
    if result.returncode != 0:
        raise DaemonControlError(
            f"'systemctl --user start {SERVICE_UNIT}' failed: {result.stderr.strip()}; "
            "see 'iris daemon logs'"
        )


# --- a detached process ----------------------------------------------------------------


def irisd_command() -> list[str]:
    """irisd of this installation: the script next to this Python, else ``-m irisd.main``."""
    script = Path(sys.executable).parent / "irisd"
    if os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "irisd.main"]


def daemon_environment(env: Mapping[str, str], socket_path: Path) -> dict[str, str]:
    """The environment a detached irisd starts with: the caller's, minus what belongs to
    the caller, with the socket pinned to ``socket_path``."""
    kept = {
        key: value
        for key, value in env.items()
        if key not in _NOT_INHERITED and not key.startswith(_NOT_INHERITED_PREFIXES)
    }
    kept["IRIS_SOCKET"] = str(socket_path)
    return kept


def start_detached(layout: Layout, socket_path: Path) -> int:
    """Start irisd in a new session, outliving this process; returns its pid at once.

    A shell starts irisd in the background, prints its pid and exits, so irisd is
    re-parented to init and never becomes a zombie of a long-lived caller (the MCP shim).
    """
    for folder in (layout.pid_file.parent, layout.log_file.parent):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    argv = [*irisd_command(), "--pid-file", str(layout.pid_file)]
    rotate_log(layout.log_file)
    with layout.log_file.open("ab") as log:
        launcher = subprocess.run(
            ["/bin/sh", "-c", '"$@" >&2 & echo $!', "sh", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=daemon_environment(os.environ, socket_path),
            cwd="/",
            start_new_session=True,
            check=True,
            timeout=30,
        )
    return int(launcher.stdout)


def rotate_log(path: Path, limit: int = MAX_LOG_BYTES) -> None:
    """Keep one previous log (``irisd.log.1``) so the log never grows without bound."""
    with contextlib.suppress(OSError):
        if path.stat().st_size > limit:
            path.replace(path.with_name(path.name + ".1"))


def log_tail(path: Path, lines: int = 5) -> str:
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - max(8192, lines * 2048)))
            return "\n".join(file.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def _start_lock(layout: Layout) -> Iterator[None]:
    """Serialise starts: two shims starting at once must not race for the socket."""
    layout.start_lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with layout.start_lock.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def wait_until_answering(socket_path: Path, deadline: float, pid: int | None = None) -> Welcome | None:
    """Poll until irisd answers, the deadline passes, or process ``pid`` is gone."""
    while True:
        welcome = daemon_welcome(socket_path)
        if welcome is not None or time.monotonic() >= deadline:
            return welcome
        if pid is not None and not is_alive(pid):
            return daemon_welcome(socket_path)  # it may have lost a race to a twin that answers
        time.sleep(POLL_S)


def ensure_daemon(socket_path: Path | None = None, timeout: float = 15.0) -> None:
    """Make sure irisd answers on ``socket_path`` (default: this environment's socket).

    If nothing answers, start irisd (through systemd when the user service is installed
    for that socket and a user manager runs, else as a detached process that outlives
    the caller, logging to ``$IRIS_HOME/logs/irisd.log``) and wait up to ``timeout``
    seconds until it answers. Raises DaemonNotRunningError saying what to do if it
    does not.
    """
    layout = Layout.from_env()
    socket_path = socket_path or layout.paths.socket
    if daemon_welcome(socket_path) is None:
        start_daemon(layout, socket_path, timeout)


def start_daemon(layout: Layout, socket_path: Path, timeout: float = 15.0) -> Welcome:
    """Start irisd for ``socket_path`` and wait until it answers (see ``ensure_daemon``)."""
    deadline = time.monotonic() + timeout
    with _start_lock(layout):
        welcome = daemon_welcome(socket_path)
        if welcome is not None:  # another caller started it meanwhile
            return welcome
        pid = None
        try:
            if systemd_serves(layout, socket_path):
                how, logs = "the systemd user service", "'iris daemon logs' (journalctl --user -u irisd)"
                start_with_systemd()
            else:
                how, logs = "a background process", str(layout.log_file)
                pid = start_detached(layout, socket_path)
        except (DaemonControlError, OSError, ValueError, subprocess.SubprocessError) as exc:
            raise DaemonNotRunningError(
                f"irisd is not running on {socket_path} and could not be started: {exc}; "
                "start it by hand with 'irisd'"
            ) from None
        welcome = wait_until_answering(socket_path, deadline, pid)
        if welcome is not None:
            # irisd writes its pid file just after it starts answering: wait for it, so that
            # what follows (e.g. 'iris daemon start' saying how it runs) sees it.
            while pid is not None and read_pid_file(layout) != welcome.pid and time.monotonic() < deadline:
                time.sleep(POLL_S)
            return welcome
    if pid is not None and not is_alive(pid):
        problem = "started as a background process but exited"
    else:
        problem = f"started as {how} but did not answer within {timeout:g} s"
    tail = log_tail(layout.log_file) if pid is not None else ""
    raise DaemonNotRunningError(
        f"irisd {problem} (socket {socket_path}); see its log: {logs}" + (f"\n{tail}" if tail else "")
    )


# --- stopping ------------------------------------------------------------------------


def read_pid_file(layout: Layout) -> int | None:
    try:
        return int(layout.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _proc_state(pid: int) -> str | None:
    """The process's state letter (R, S, Z...), None if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_alive(pid: int) -> bool:
    """Is ``pid`` running (a zombie waiting to be reaped is not)?"""
    return _proc_state(pid) not in (None, "Z")


def is_irisd(pid: int) -> bool:
    """Is ``pid`` a live irisd (not a zombie, not a recycled pid)?"""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return is_alive(pid) and b"irisd" in cmdline


def stop_pid(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM irisd ``pid`` (it drains: tells recorded interrupted, children stopped)
    and wait until it has exited."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while is_irisd(pid):
        if time.monotonic() >= deadline:
            raise DaemonControlError(
                f"irisd (pid {pid}) did not stop within {timeout:g} s; 'kill -9 {pid}' ends it "
                "(its unfinished tells are recorded as interrupted at the next start)"
            )
        time.sleep(POLL_S)


# --- what runs -------------------------------------------------------------------------


@dataclass(frozen=True)
class DaemonState:
    """Is irisd up on this environment's socket, and how was it started?"""

    socket: Path
    welcome: Welcome | None
    how: str  # "systemd", "background" (pid file), "foreground" (by hand), "" when down

    @property
    def running(self) -> bool:
        return self.welcome is not None

    @property
    def pid(self) -> int | None:
        return self.welcome.pid if self.welcome else None


def daemon_state(layout: Layout, socket_path: Path | None = None) -> DaemonState:
    socket_path = socket_path or layout.paths.socket
    welcome = daemon_welcome(socket_path)
    how = ""
    if welcome is not None:
        if _in_service_cgroup(welcome.pid):
            how = "systemd"
        elif read_pid_file(layout) == welcome.pid:
            how = "background"
        else:
            how = "foreground"
    return DaemonState(socket=socket_path, welcome=welcome, how=how)


def _in_service_cgroup(pid: int) -> bool:
    """systemd runs every service in a cgroup named after its unit."""
    try:
        return f"/{SERVICE_UNIT}" in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


# --- the units (their text: iris_cli.systemd_unit) -----------------------------------


def installed_units(layout: Layout, env: Mapping[str, str] | None = None) -> dict[Path, str]:
    """The two unit files for this installation: its irisd, IRIS_HOME, socket and PATH
    (a user manager's PATH rarely finds claude)."""
    env = os.environ if env is None else env
    environment = {"IRIS_HOME": str(layout.paths.home)}
    socket_path = layout.paths.socket
    if layout.runtime_dir is not None and socket_path == layout.runtime_dir / "iris" / "irisd.sock":
        listen = REFERENCE_LISTEN
    else:
        listen = systemd_path(socket_path)
        environment["IRIS_SOCKET"] = str(socket_path)
    for key in ("CLAUDE_CONFIG_DIR", "PATH"):
        if env.get(key):
            environment[key] = env[key]
    exec_start = " ".join(systemd_quote(arg) for arg in irisd_command())
    env_file = systemd_path(layout.paths.home / "irisd.env")
    return {
        layout.service_file: render_service_unit(exec_start, env_file, environment),
        layout.socket_file: render_socket_unit(listen),
    }


def _systemctl_checked(*args: str) -> None:
    result = systemctl_user(*args)
    if result.returncode != 0:
        raise DaemonControlError(f"'systemctl --user {' '.join(args)}' failed: {result.stderr.strip()}")


def install_service(layout: Layout) -> list[Path]:
    """Write the units, reload the user manager and enable the socket (systemd then starts
    irisd on the first connection, at every login). Returns the files written."""
    units = installed_units(layout)
    layout.unit_dir.mkdir(parents=True, exist_ok=True)
    for path, text in units.items():
        path.write_text(text)
    _systemctl_checked("daemon-reload")
    _systemctl_checked("enable", "--now", SOCKET_UNIT)
    return list(units)


def uninstall_service(layout: Layout) -> list[Path]:
    """Stop and disable the units and remove their files; returns the files removed."""
    present = [path for path in (layout.service_file, layout.socket_file) if path.exists()]
    manager = bool(present) and user_manager_problem() is None
    if manager:
        systemctl_user("disable", "--now", SOCKET_UNIT, SERVICE_UNIT)  # fine if already off
    for path in present:
        path.unlink()
    if manager:
        _systemctl_checked("daemon-reload")
    return present


def stop_daemon(layout: Layout, socket_path: Path | None = None) -> int | None:
    """Stop irisd however it runs (service, background, by hand) and wait until it has
    drained. Returns the pid that stopped, None when none was running."""
    socket_path = socket_path or layout.paths.socket
    stopped = None
    if layout.service_file.exists() and user_manager_problem() is None:
        # The socket too: a connection would start the service again.
        _systemctl_checked("stop", SOCKET_UNIT, SERVICE_UNIT)
    welcome = daemon_welcome(socket_path)
    pid = welcome.pid if welcome else read_pid_file(layout)
    if pid is not None and is_irisd(pid):
        stop_pid(pid)
        stopped = pid
    return stopped
