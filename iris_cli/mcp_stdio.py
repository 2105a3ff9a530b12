"""``iris mcp``: the Iris MCP tools (``iris_mcp``) served on stdin/stdout to Claude Code, as a
thin client of irisd's socket. Parsed by Typer here, once (the full CLI mounts this same app
and adds ``install``/``uninstall`` to it).

It lives in the CLI, not in ``iris_mcp``, because it is a client of the socket like every
command: it uses the CLI's connection pool (``aclient``) and starts irisd when none runs
(``daemon_control``), and ``iris_mcp`` sits below ``iris_cli`` in the layers (it is also
loaded by irisd's ``/mcp``, which must not import the CLI). What both transports share, the
``Shim`` and its tools, is ``iris_mcp``'s (``iris_mcp/shim.py``).

Start-up is on every Claude Code session's path, so this module imports only Typer (about
25 ms; trio, msgspec and the tool definitions when it serves: ``iris mcp install`` needs
none of them); the MCP SDK loads only for a line the
transport's fast path leaves to it (an ``initialize``: the older protocol era; a retry
answering a form), and the daemon is contacted on the first tool call. stdout is the MCP
wire: logs go to stderr, and while serving fd 1 points at stderr so that nothing else can
reach the wire either. The transport, and the fast path that answers a session of the 2026-07-28
era without the SDK, are ``iris_mcp/stdio.py``.

Tool calls reuse kept connections to irisd (``aclient.ConnectionPool``: a new one costs
a connect and a hello, about 0.5 ms); one irisd closed (it restarted) is seen before it is
used, so a daemon that restarted between two calls is simply reached again, and a
cancelled call just closes its socket. When nothing listens, the shim starts irisd
(``daemon_control.ensure_daemon``) and tries once more. A request that was sent and
then lost its connection is resent once only if resending cannot do anything twice
(idempotent requests); a tell or a command is not: the daemon may already have queued
it, and a second copy would reach the other team twice. The model gets an error that
says how to find out (team_report, team_result).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    import trio

    from iris_cli.aclient import ConnectionPool
    from protocol.messages import Event, Reply, Request

log = logging.getLogger("iris.mcp")

DAEMON_START_TIMEOUT_S = 15.0

mcp_app = typer.Typer(
    help="The MCP server Claude Code launches ('iris mcp [--team NAME]'), and its registration.",
    invoke_without_command=True,
)


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


@mcp_app.callback()
def serve_stdio(
    ctx: typer.Context,
    team: Annotated[
        str | None,
        typer.Option(help="The team this server speaks for (default: the team whose folder holds the cwd)."),
    ] = None,
    no_autostart: Annotated[
        bool, typer.Option("--no-autostart", help="Do not start irisd when it is not running.")
    ] = False,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Serve only the tools that read (iris-agent's tool set).")
    ] = False,
    log_level: Annotated[
        LogLevel | None,
        typer.Option(
            case_sensitive=False, help="What to log on stderr (default: $IRIS_MCP_LOG_LEVEL, else warning)."
        ),
    ] = None,
) -> None:
    """Serve the Iris tools over MCP on stdin/stdout (what Claude Code runs)."""
    if ctx.invoked_subcommand is not None:
        return
    level = log_level.value if log_level else os.environ.get("IRIS_MCP_LOG_LEVEL", "warning").lower()
    if level not in LogLevel.__members__:
        level = "warning"
    raise typer.Exit(run(team=team, autostart=not no_autostart, read_only=read_only, log_level=level))


def run(*, team: str | None, autostart: bool, read_only: bool, log_level: str) -> int:
    """Serve until the client closes stdin; returns the exit code."""
    logging.basicConfig(
        stream=sys.stderr,
        level=log_level.upper(),
        format="%(asctime)s iris-mcp %(levelname)s %(name)s: %(message)s",
    )
    import trio

    from iris_mcp import stdio
    from iris_mcp.shim import Shim, StateSeal

    link = DaemonLink(autostart=autostart)
    shim = Shim(link, team=team, cwd=os.getcwd(), env=os.environ, read_only=read_only)
    seal = StateSeal(lambda ctx: None)  # one client: the stdio principal is nobody in particular
    try:
        trio.run(stdio.serve_stdio, shim, seal)
    except KeyboardInterrupt:
        return 130
    return 0


class DaemonLink:
    """Kept connections to irisd; starts the daemon when nothing answers."""

    def __init__(self, socket_path: Path | None = None, *, autostart: bool = True) -> None:
        self._socket_path = socket_path
        self.autostart = autostart
        import trio

        self._start_lock: trio.Lock = trio.Lock()
        self._pool: ConnectionPool | None = None

    @property
    def socket_path(self) -> Path:
        if self._socket_path is None:
            from iris_cli.client import default_socket_path

            self._socket_path = default_socket_path()
        return self._socket_path

    async def call(
        self,
        request: Request,
        *,
        idempotent: bool,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        start_daemon: bool = True,
    ) -> Reply:
        """The daemon's reply to ``request``; raises its IrisError.

        DaemonUnreachable (nothing was sent): start the daemon (unless not
        ``start_daemon``), send once more.
        ConnectionLost (sent, then cut off): resend once only if ``idempotent``.
        """
        from protocol.errors import ConnectionLost, DaemonUnreachable


        try:
            return await self._once(request, on_event)
        except DaemonUnreachable:
            if not start_daemon:
                raise
            await self.ensure_daemon()
        except ConnectionLost:
            if not idempotent:
                raise
            log.info("irisd dropped the connection; reconnecting once for %s", type(request).__name__)
            await self.ensure_daemon()
        return await self._once(request, on_event)

    async def _once(self, request: Request, on_event: Callable[[Event], Awaitable[None]] | None) -> Reply:
        if self._pool is None:
            from iris_cli.aclient import ConnectionPool

            self._pool = ConnectionPool(self.socket_path, "iris-mcp")
        return await self._pool.request(request, on_event)

    async def ensure_daemon(self) -> None:
        """Start irisd if it does not answer (in a thread: it polls and may run systemctl)."""
        from protocol.errors import DaemonUnreachable

        if not self.autostart:
            raise DaemonUnreachable(
                f"irisd is not running (nothing listens on {self.socket_path}); start it with 'irisd'"
            )
        from iris_cli.daemon_control import ensure_daemon

        async with self._start_lock:  # concurrent calls start it once
            log.info("starting irisd for %s", self.socket_path)
            # Abandoned on cancel: the caller's deadline holds even while systemctl or the
            # start lock is slow (the thread finishes on its own; a second start is harmless).
            import trio

            await trio.to_thread.run_sync(
                partial(ensure_daemon, self.socket_path, timeout=DAEMON_START_TIMEOUT_S), abandon_on_cancel=True
            )
