"""``iris daemon ...``: install and drive the irisd user service.

Where ``systemctl --user`` works, irisd is a systemd user service started by its socket;
elsewhere it is a detached background process with a pid file and a log file under
``IRIS_HOME``. Every command works in both cases (see ``iris_cli.daemon_control``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.text import Text

from iris_cli import render
from iris_cli.daemon_control import (
    DaemonState,
    Layout,
    daemon_state,
    install_service,
    log_tail,
    start_daemon,
    stop_daemon,
    uninstall_service,
    user_manager_problem,
)
from iris_cli.systemd_unit import SERVICE_UNIT
from protocol.errors import IrisError

daemon_app = typer.Typer(help="Install, start, stop and inspect the irisd service.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
START_TIMEOUT_S = 20.0


def _fail(error: IrisError) -> NoReturn:
    render.error(error.message)
    raise typer.Exit(1)


def _home(path: Path) -> str:
    """``~/...`` for paths under the home folder: shorter to read."""
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)


@daemon_app.command()
def install() -> None:
    """Install irisd as a systemd user service (started by its socket, at every login).

    Without a systemd user manager, start irisd as a background process instead.
    """
    layout = Layout.from_env()
    problem = user_manager_problem()
    try:
        if problem is None:
            running = daemon_state(layout)
            if running.how in ("background", "foreground"):
                stop_daemon(layout)  # the service takes over its socket
            written = install_service(layout)
            render.out.print(f"installed {', '.join(_home(p) for p in written)}")
            render.out.print("systemd starts irisd on the first connection ('iris daemon start': now)")
            return
        before = daemon_state(layout)
        welcome = None if before.running else start_daemon(layout, layout.paths.socket, START_TIMEOUT_S)
    except IrisError as exc:
        _fail(exc)
    render.out.print(f"no systemd user manager here ({problem})")
    if welcome is None:  # it ran before this command: nothing was started
        render.out.print(
            f"irisd is already running (pid {before.pid}, {_how(before)}), so it goes on as it is; "
            "'iris daemon start' starts it again after a reboot"
        )
        return
    render.out.print(
        f"started irisd as a background process instead (pid {welcome.pid}, logs: {_home(layout.log_file)}); "
        "'iris daemon start' starts it again after a reboot"
    )


@daemon_app.command()
def uninstall() -> None:
    """Stop irisd and remove its systemd units."""
    layout = Layout.from_env()
    try:
        removed = uninstall_service(layout)
        stopped = stop_daemon(layout)
    except IrisError as exc:
        _fail(exc)
    if removed:
        render.out.print(f"removed {', '.join(_home(p) for p in removed)}")
    if stopped:
        render.out.print(f"stopped irisd (pid {stopped})")
    if not removed and not stopped:
        render.out.print("irisd was neither installed nor running")


@daemon_app.command()
def start() -> None:
    """Start irisd (the service if installed, else a background process) and wait for it."""
    layout = Layout.from_env()
    state = daemon_state(layout)
    if state.running:
        render.out.print(f"irisd is already running (pid {state.pid}, {_how(state)})")
        return
    try:
        start_daemon(layout, layout.paths.socket, START_TIMEOUT_S)
    except IrisError as exc:
        _fail(exc)
    state = daemon_state(layout)
    render.out.print(f"irisd is running (pid {state.pid}, {_how(state)})")


@daemon_app.command()
def stop() -> None:
    """Stop irisd: running tells are recorded as interrupted, claude processes stopped."""
    layout = Layout.from_env()
    try:
        stopped = stop_daemon(layout)
    except IrisError as exc:
        _fail(exc)
    render.out.print(f"stopped irisd (pid {stopped})" if stopped else "irisd is not running")


@daemon_app.command()
def status(as_json: JsonOption = False) -> None:
    """Is irisd running, how was it started, where are its socket and logs."""
    layout = Layout.from_env()
    try:
        state = daemon_state(layout)
    except IrisError as exc:
        _fail(exc)
    installed = layout.service_file.exists()
    if as_json:
        print(json.dumps({
            "running": state.running,
            "pid": state.pid,
            "how": state.how or None,
            "version": state.welcome.daemon_version if state.welcome else None,
            "socket": str(state.socket),
            "log": _log_place(layout, state),
            "service_installed": installed,
        }, indent=2))
    else:
        _print_status(layout, state, installed)
    if not state.running:
        raise typer.Exit(1)


def _print_status(layout: Layout, state: DaemonState, installed: bool) -> None:
    if state.welcome is not None:
        render.out.print(Text.assemble(
            f"irisd {state.welcome.daemon_version} is ", ("running", "green"), f" (pid {state.pid}, {_how(state)})"
        ))
    else:
        render.out.print(Text.assemble("irisd is ", ("not running", "red"), f" (nothing answers on {state.socket})"))
    logs = _log_place(layout, state) or "journalctl --user -u irisd"
    service = f"installed ({_home(layout.service_file)})" if installed else "not installed"
    for label, value in (("socket", str(state.socket)), ("logs", logs), ("service", service)):
        render.out.print(f"  {label:<8} {value}")


def _log_place(layout: Layout, state: DaemonState) -> str | None:
    """Where this irisd's log goes: the journal (None), the background log file, or, for one
    started by hand, its standard error (a terminal or a file: read from /proc)."""
    if state.how == "systemd":
        return None
    if state.how == "foreground" and state.pid:
        try:
            target = os.readlink(f"/proc/{state.pid}/fd/2")
        except OSError:
            return "its standard error (where it was started)"
        if target.startswith("/dev/pts/") or target.startswith("/dev/tty"):
            return f"its standard error, the terminal {target} it was started in"
        if not target.startswith("/"):  # a pipe or a socket
            return f"its standard error ({target})"
        return f"its standard error: {_home(Path(target))}"
    return _home(layout.log_file)


def _how(state: DaemonState) -> str:
    return {
        "systemd": "systemd user service",
        "background": "background process",
        "foreground": "started by hand",
    }.get(state.how, "?")


@daemon_app.command()
def logs(
    lines: Annotated[int, typer.Option("--lines", "-n", help="How many lines to show.")] = 50,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines.")] = False,
) -> None:
    """Show irisd's log (the journal for the service, else $IRIS_HOME/logs/irisd.log)."""
    layout = Layout.from_env()
    journalctl = shutil.which("journalctl")
    if layout.service_file.exists() and journalctl and user_manager_problem() is None:
        argv = [journalctl, "--user", "-u", SERVICE_UNIT, "-n", str(lines), "--no-pager"]
        os.execv(journalctl, [*argv, "-f"] if follow else argv)
    if not layout.log_file.exists():
        _fail(IrisError(f"no log at {layout.log_file} yet; irisd writes it when started in the background"))
    for line in log_tail(layout.log_file, lines).splitlines():
        print(line)
    if follow:
        _follow(layout.log_file)


def _follow(path: Path) -> None:
    with path.open("rb") as file:
        file.seek(0, os.SEEK_END)
        try:
            while True:
                chunk = file.read()
                if chunk:
                    sys.stdout.write(chunk.decode(errors="replace"))
                    sys.stdout.flush()
                else:
                    time.sleep(0.25)
        except KeyboardInterrupt:
            pass
