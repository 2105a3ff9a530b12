"""``iris daemon ...`` and ``ensure_daemon``: the background fallback for real, the
systemd path against a stand-in ``systemctl`` (tests have no user manager)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import REPO, Iris
from iris_cli.daemon_control import (
    Layout,
    ensure_daemon,
    irisd_command,
    is_alive,
    read_pid_file,
    rotate_log,
    stop_pid,
)
from iris_cli.systemd_unit import (
    REFERENCE_ENVIRONMENT_FILE,
    REFERENCE_EXEC_START,
    REFERENCE_LISTEN,
    render_service_unit,
    render_socket_unit,
    systemd_quote,
)
from protocol.errors import DaemonNotRunningError

NO_MANAGER = '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n'


@pytest.fixture
def env(iris: Iris) -> Iterator[dict[str, str]]:
    """iris's environment with its own XDG_CONFIG_HOME and a bin folder first on PATH;
    stops any irisd left in the background."""
    bin_dir = iris.root / "bin"
    bin_dir.mkdir()
    iris.env.update(XDG_CONFIG_HOME=str(iris.root / "config"), PATH=f"{bin_dir}:{iris.env['PATH']}")
    iris.env.pop("XDG_RUNTIME_DIR", None)
    iris.add_team("alpha")
    iris.write_config()
    yield iris.env
    pid = read_pid_file(Layout.from_env(iris.env))
    if pid is not None and is_alive(pid):
        stop_pid(pid)


def fake(iris: Iris, name: str, script: str) -> None:
    path = iris.root / "bin" / name
    path.write_text(script)
    path.chmod(0o755)


def daemon(iris: Iris, *args: str) -> subprocess.CompletedProcess[str]:
    return iris.cli("daemon", *args, timeout=60)


def test_without_systemd_irisd_runs_as_a_background_process(iris: Iris, env: dict[str, str]) -> None:
    fake(iris, "systemctl", NO_MANAGER)
    layout = Layout.from_env(env)
    down = daemon(iris, "status", "--json")
    assert down.returncode == 1 and json.loads(down.stdout)["running"] is False

    installed = daemon(iris, "install")
    assert installed.returncode == 0, installed.stderr
    assert "no systemd user manager here ('systemctl --user' failed: Failed to connect" in installed.stdout
    assert "started irisd as a background process" in installed.stdout
    assert not layout.service_file.exists()

    state = json.loads(daemon(iris, "status", "--json").stdout)
    assert state["running"] and state["how"] == "background"
    pid = state["pid"]
    assert read_pid_file(layout) == pid
    assert state["socket"] == str(iris.socket) and state["log"] == str(layout.log_file)
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    parent, session, terminal = int(stat[1]), int(stat[3]), int(stat[4])
    # Detached: re-parented, in the launcher's new session, with no controlling terminal.
    assert parent != os.getpid() and session not in (0, os.getsid(0)) and terminal == 0

    assert "irisd ready" in daemon(iris, "logs", "-n", "5").stdout
    assert "already running" in daemon(iris, "start").stdout
    reinstalled = daemon(iris, "install")  # with irisd running: it says so, and starts nothing
    assert reinstalled.returncode == 0
    assert f"irisd is already running (pid {pid}, background process)" in reinstalled.stdout
    assert "started irisd" not in reinstalled.stdout and read_pid_file(layout) == pid

    stopped = daemon(iris, "stop")
    assert stopped.stdout.strip() == f"stopped irisd (pid {pid})"
    assert not is_alive(pid) and not layout.pid_file.exists()
    assert daemon(iris, "stop").stdout.strip() == "irisd is not running"

    started = daemon(iris, "start")
    assert started.returncode == 0 and "(pid" in started.stdout and "background process" in started.stdout
    again = read_pid_file(layout)
    assert again is not None and again != pid
    assert f"stopped irisd (pid {again})" in daemon(iris, "uninstall").stdout
    assert not is_alive(again)


def test_with_systemd_install_writes_and_enables_the_units(iris: Iris, env: dict[str, str]) -> None:
    calls = iris.root / "systemctl.calls"
    fake(iris, "systemctl", f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake(iris, "journalctl", '#!/bin/sh\necho "journalctl $@"\n')
    layout = Layout.from_env(env)

    installed = daemon(iris, "install")
    assert installed.returncode == 0, installed.stderr
    assert calls.read_text().splitlines() == [
        "--user show-environment",
        "--user daemon-reload",
        "--user enable --now irisd.socket",
    ]
    service = layout.service_file.read_text()
    assert "ExecStart=" + " ".join(systemd_quote(a) for a in irisd_command()) in service
    assert f"Environment=IRIS_HOME={iris.home}" in service
    assert f"Environment=IRIS_SOCKET={iris.socket}" in service  # not under XDG_RUNTIME_DIR
    assert f"Environment=PATH={env['PATH']}" in service
    assert f"EnvironmentFile=-{iris.home}/irisd.env" in service
    assert f"ListenStream={iris.socket}\n" in layout.socket_file.read_text()
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(
            ["systemd-analyze", "--user", "verify", str(layout.service_file), str(layout.socket_file)],
            capture_output=True, text=True, env={**env, "XDG_RUNTIME_DIR": str(iris.root)},
        )
        problems = [line for line in verify.stderr.splitlines() if "RestartSteps" not in line
                    and "RestartMaxDelaySec" not in line]  # systemd < 254 does not know these
        assert problems == [], verify.stderr

    calls.unlink()
    assert daemon(iris, "logs", "-n", "7").stdout.strip() == (
        "journalctl --user -u irisd.service -n 7 --no-pager"
    )
    assert daemon(iris, "stop").stdout.strip() == "irisd is not running"
    assert "--user stop irisd.socket irisd.service" in calls.read_text()

    calls.unlink()
    removed = daemon(iris, "uninstall")
    assert "removed" in removed.stdout and "irisd.service" in removed.stdout
    assert "--user disable --now irisd.socket irisd.service" in calls.read_text().splitlines()
    assert calls.read_text().splitlines()[-1] == "--user daemon-reload"
    assert not layout.service_file.exists() and not layout.socket_file.exists()


def test_committed_units_are_what_install_writes() -> None:
    service = render_service_unit(REFERENCE_EXEC_START, REFERENCE_ENVIRONMENT_FILE, {})
    assert (REPO / "systemd" / "irisd.service").read_text() == service
    assert (REPO / "systemd" / "irisd.socket").read_text() == render_socket_unit(REFERENCE_LISTEN)
    for required in ("Type=notify", "WatchdogSec=", "KillMode=mixed", "Restart=on-failure",
                     "StartLimitBurst=", "StartLimitIntervalSec=", "RestartSec="):
        assert required in service
    for setting in ("MemoryDenyWriteExecute=", "ProtectHome="):
        assert f"\n{setting}" not in service  # they break claude
    assert "SocketMode=0600" in render_socket_unit(REFERENCE_LISTEN)


def test_the_background_log_is_rotated_when_large(tmp_path: Path) -> None:
    log = tmp_path / "irisd.log"
    log.write_bytes(b"x" * 11)
    rotate_log(log, limit=10)
    assert not log.exists() and (tmp_path / "irisd.log.1").read_bytes() == b"x" * 11
    log.write_bytes(b"small")
    rotate_log(log, limit=10)
    assert log.read_bytes() == b"small"
    rotate_log(tmp_path / "missing.log")  # nothing to do, no error


def test_systemd_quote() -> None:
    assert systemd_quote("/opt/iris/bin/irisd") == "/opt/iris/bin/irisd"
    assert systemd_quote("/home/me/my tools/irisd") == '"/home/me/my tools/irisd"'
    assert systemd_quote("/srv/100%/$x") == "/srv/100%%/$$x"
    assert systemd_quote('KEY=a "b"', dollar=False) == '"KEY=a \\"b\\""'


def test_ensure_daemon_starts_a_detached_irisd_once(
    iris: Iris, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    layout = Layout.from_env()
    started = time.monotonic()
    ensure_daemon(iris.socket, timeout=20)
    pid = read_pid_file(layout)
    assert pid is not None and is_alive(pid)
    ensure_daemon(iris.socket, timeout=20)  # already up: nothing new
    assert read_pid_file(layout) == pid
    assert time.monotonic() - started < 20
    stop_pid(pid)


def test_ensure_daemon_reports_why_irisd_did_not_start(
    iris: Iris, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (iris.home / "config.yaml").write_text("settings:\n  responseTimout: 5000\n")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    started = time.monotonic()
    with pytest.raises(DaemonNotRunningError) as caught:
        ensure_daemon(iris.socket, timeout=20)
    assert time.monotonic() - started < 10  # it noticed the exit, not the timeout
    message = caught.value.message
    assert "started as a background process but exited" in message
    assert str(Layout.from_env().log_file) in message
    assert "unknown key 'settings.responseTimout'" in message


def test_status_of_an_irisd_started_by_hand_names_where_its_log_really_goes(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()  # by hand: its standard error goes to the harness's log file
    status = iris.cli_json("daemon", "status")
    assert status["how"] == "foreground"
    assert status["log"] == f"its standard error: {iris.log_path}", status
    human = iris.cli("daemon", "status").stdout
    assert str(iris.log_path) in human and "logs/irisd.log" not in human
