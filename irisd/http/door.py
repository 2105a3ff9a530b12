"""The HTTP face's door: its socket, bound when irisd starts, and the face itself
(hypercorn, starlette and the routes: about 110 ms of CPU, a quarter of irisd's start-up
on 2 cores) loaded when it is first needed:

* a client connects (the socket has been listening since the start: the connection
  waits in the kernel's queue until the face accepts it);
* a claude child is granted its token (``Access.on_grant``): it connects to ``/mcp`` next;
* the MCP preload asks (``settings.preloadMcp``, once irisd is ready).

An irisd that no child, browser or HTTP client talks to never loads it. The modules are
imported in a worker thread, so the event loop serves the socket on meanwhile; the face
is then built and served on the loop (irisd/http/listener.py).

The socket is bound before the core starts (``open_http_socket``), so a port already
taken stops irisd at once with an error naming ``settings.httpPort``, and the children
the core spawns already know the URL.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable
from typing import Protocol

import trio

from irisd.http.security import url_host
from protocol.errors import IrisError

log = logging.getLogger("irisd.http")

BACKLOG = 128
# A client that takes none of what irisd writes for this long is gone: the kernel ends the
# connection (TCP_USER_TIMEOUT, which Linux gives every connection accepted on the
# listening socket), and the write waiting on it fails. One bound for every route: a reader
# that read nothing of a transcript's streamed body, an A2A stream or an SSE reply held its
# connection, and a place under the connection cap, until irisd stopped. The socket face's
# bound is the same (irisd/socket_server.py); /api/events has a shorter one of its own.
SEND_TIMEOUT_S = 30.0


class HttpError(IrisError):
    code = "http"


def open_http_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one); HttpError naming
    the setting to change when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise HttpError(
            f"settings.httpHost {host!r} is not an address of this machine ({exc.strerror}); use 127.0.0.1"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of our last run only
        sock.bind(address)
        sock.listen(BACKLOG)
        if hasattr(socket, "TCP_USER_TIMEOUT"):  # Linux; elsewhere a reader that reads nothing stays
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(SEND_TIMEOUT_S * 1000))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise HttpError(
                f"settings.httpPort {port} is already in use on {host} (another irisd, or another program); "
                "set settings.httpPort in config.yaml to a free port, or 0 for any free port"
            ) from None
        raise HttpError(
            f"cannot listen on {host}:{port} ({exc.strerror}); check settings.httpHost and settings.httpPort"
        ) from None
    sock.setblocking(False)
    return sock


def socket_url(sock: socket.socket) -> tuple[str, int]:
    """The host (as in a URL) and port a bound socket listens on."""
    host, port = sock.getsockname()[:2]
    return url_host(host), port


class Face(Protocol):
    """What the door needs of the loaded face: irisd/http/listener.py's ``HttpServer``."""

    def want_mcp(self) -> None: ...
    def stop_accepting(self) -> None: ...
    async def run(self) -> None: ...


class HttpDoor:
    """Serves the HTTP face on ``sock`` from when it is first needed (see the module's
    docstring): ``load`` imports its modules (in a worker thread), then ``build`` makes it."""

    def __init__(self, sock: socket.socket, load: Callable[[], object], build: Callable[[], Face]) -> None:
        self.sock = sock
        self._load = load
        self._build = build
        self.server: Face | None = None
        self._needed = trio.Event()
        self._mcp_wanted = False
        self._stopped = False

    def want_face(self) -> None:
        """A child is about to connect to ``/mcp``: load the face (its first requests are
        answered without the MCP SDK, irisd/http/mcp.py). Idempotent, never blocks."""
        self._needed.set()

    def want_mcp(self) -> None:
        """The preload: load the face, and the MCP SDK with it. Idempotent, never blocks."""
        if self.server is not None:
            self.server.want_mcp()
            return
        self._mcp_wanted = True
        self._needed.set()

    def stop_accepting(self) -> None:
        """The drain: the face stops accepting (or, not loaded yet, is never loaded)."""
        if self.server is not None:
            self.server.stop_accepting()
            return
        self._stopped = True
        self._needed.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Wait until the face is needed, load and serve it until cancelled or drained
        (``HttpServer.run``). Cancelled while loading, the worker thread's import runs to
        its end first."""
        task_status.started()
        async with trio.open_nursery() as nursery:

            async def a_client() -> None:
                await trio.lowlevel.wait_readable(self.sock)  # a connection waits to be accepted
                self._needed.set()

            nursery.start_soon(a_client)
            await self._needed.wait()
            nursery.cancel_scope.cancel()
        if self._stopped:
            return
        started = trio.current_time()
        await trio.to_thread.run_sync(self._load)
        if self._stopped:
            return
        self.server = self._build()
        log.debug("HTTP face loaded", extra={"load_s": round(trio.current_time() - started, 3)})
        if self._mcp_wanted:
            self.server.want_mcp()
        await self.server.run()
